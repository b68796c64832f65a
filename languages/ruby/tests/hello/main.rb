puts "Hello, World!"
