print "Name? "
name = gets.chomp
puts "Hello, #{name}!"
