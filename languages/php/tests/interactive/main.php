<?php
echo "Name? ";
$name = trim(fgets(STDIN));
echo "Hello, $name!\n";
