program main
  use greeting
  print '(a)', greet("World")
end program main
