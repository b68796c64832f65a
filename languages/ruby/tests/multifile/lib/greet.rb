def greet(name)
  "Hello, #{name}! (from another file)"
end
