package Greet;
use strict;
use warnings;
sub greet { return "Hello, $_[0]! (from another file)"; }
1;
