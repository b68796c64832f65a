while (my $line = <STDIN>) { print "> $line"; }
