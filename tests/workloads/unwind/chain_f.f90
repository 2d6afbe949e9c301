! chain_f — the Fortran twin of chain.c: the program unit (MAIN__, called
! by main) runs an OpenMP parallel region of NTHREADS threads (default 2),
! each running chain_a (module chainf, in the executable) -> chain_b ->
! chain_c (module chainf_lib, in libchain_f.so) for MILLIONS million
! iterations (default 150, about 1.2 s).
!
! Built with -fno-inline (gfortran 12 has no noinline attribute): chain_a
! stays a frame of its own.
!
! usage: chain_f [MILLIONS [NTHREADS]]. Prints "ok" and nothing else.
module chainf
  use chainf_lib, only: chain_b
  implicit none
  private
  public :: chain_a
  real(8), volatile :: barrier = 0d0

contains

  function chain_a(iterations) result(r)
    integer(8), intent(in) :: iterations
    real(8) :: r

    r = chain_b(iterations)
    barrier = r
    r = r * 0.5d0
  end function chain_a

end module chainf

program chain_f
  use chainf, only: chain_a
  implicit none
  character(len=32) :: arg
  integer(8) :: iterations
  integer :: nthreads
  real(8) :: total

  iterations = 150
  nthreads = 2
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) nthreads
  end if
  iterations = iterations * 1000000_8
  total = 0d0
  !$omp parallel num_threads(nthreads) reduction(+:total)
  total = total + chain_a(iterations)
  !$omp end parallel
  if (total > 0d0) print '(a)', 'ok'
end program chain_f
