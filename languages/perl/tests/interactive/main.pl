print "Name? ";
my $name = <STDIN>;
chomp $name;
print "Hello, $name!\n";
