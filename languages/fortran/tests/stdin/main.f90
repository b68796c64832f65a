program echo
  character(len=256) :: line
  integer :: ios
  do
    read (*, '(a)', iostat=ios) line
    if (ios /= 0) exit
    print '(a)', "> " // trim(line)
  end do
end program echo
