<?php
while (($line = fgets(STDIN)) !== false) {
    echo "> " . $line;
}
