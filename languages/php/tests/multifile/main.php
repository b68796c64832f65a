<?php
require __DIR__ . "/lib/greet.php";
echo greet("World") . "\n";
