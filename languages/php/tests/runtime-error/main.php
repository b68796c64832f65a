<?php
echo "before\n";
echo intdiv(1, 0);
