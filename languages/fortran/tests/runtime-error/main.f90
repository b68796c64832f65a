program fails
  print '(a)', "before"
  error stop 3
end program fails
