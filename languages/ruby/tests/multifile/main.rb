require_relative "lib/greet"
puts greet("World")
