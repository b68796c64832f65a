module greeting
contains
  function greet(name) result(s)
    character(len=*), intent(in) :: name
    character(len=:), allocatable :: s
    s = "Hello, " // name // "! (from another file)"
  end function greet
end module greeting
