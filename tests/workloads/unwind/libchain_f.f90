! libchain_f.f90 — the Fortran twin of libchain.c: chain_b and chain_c of
! the module chainf_lib, in a shared library; chain_c burns CPU (a fixed
! number of iterations, about 8 ns each). Built -fPIC, public module
! procedures are interposable: chain_b calls chain_c through the PLT, never
! inlined.
module chainf_lib
  implicit none
  private
  public :: chain_b, chain_c
  real(8), volatile :: barrier = 0d0

contains

  ! the leaf: a dependent multiply, add and divide per iteration
  function chain_c(iterations) result(x)
    integer(8), intent(in) :: iterations
    real(8) :: x
    integer(8) :: i

    x = 1d0
    do i = 1, iterations
      x = x * 1.0000001d0 + 0.5d0 / (x + 1d0)
    end do
    barrier = x
  end function chain_c

  function chain_b(iterations) result(r)
    integer(8), intent(in) :: iterations
    real(8) :: r

    r = chain_c(iterations)
    barrier = r
    r = r + 1d0
  end function chain_b

end module chainf_lib
