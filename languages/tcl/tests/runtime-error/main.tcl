puts "before"
error "boom"
