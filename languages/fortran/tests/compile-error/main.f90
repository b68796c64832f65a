program broken
  integer :: n
  n = "not a number"
end program broken
