<?php
function greet(string $name): string {
    return "Hello, $name! (from another file)";
}
