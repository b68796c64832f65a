program ask
  character(len=64) :: name
  write (*, '(a)', advance='no') "Name? "
  read (*, '(a)') name
  print '(a)', "Hello, " // trim(name) // "!"
end program ask
