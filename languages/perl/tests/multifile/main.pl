use strict;
use warnings;
use lib "lib";
use Greet;
print Greet::greet("World"), "\n";
