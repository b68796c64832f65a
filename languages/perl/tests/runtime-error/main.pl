print "before\n";
die "boom";
