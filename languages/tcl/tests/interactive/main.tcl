puts -nonewline "Name? "
flush stdout
gets stdin name
puts "Hello, $name!"
