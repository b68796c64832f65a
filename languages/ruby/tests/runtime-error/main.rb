puts "before"
puts 1 / 0
