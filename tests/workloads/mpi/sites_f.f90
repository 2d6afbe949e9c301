! sites_f — MPI calls made from a Fortran code's own subroutines, for the
! call sites of tests/integration/mpi_fortran.sh: a profiler must name
! these subroutines, not the Fortran bindings of the MPI library.
!
! usage: mpirun -n 2 sites_f [N D M B]
!   defaults 30 100 20 512. Each of the four subroutines below runs N (the
!   reductions) or M (the messages) times:
!     sum_over_ranks     MPI_ALLREDUCE of D MPI_DOUBLE_PRECISION (use mpi)
!     pass_message       MPI_SEND / MPI_RECV of B MPI_CHARACTER, rank 0 to 1
!                        (use mpi)
!     sum_over_ranks_f08 the same Allreduce through `use mpi_f08`
!     pass_message_f08   the same Send / Recv through `use mpi_f08`
!   (built with -fno-inline: each is a frame of its own.) Each rank prints
!     rank=R allreduce=.. allreduce_f08=.. send=.. send_f08=.. recv=..
!     recv_f08=.. d=D b=B
!   the calls it made from each subroutine.
module sites_legacy
  use mpi
  implicit none
  private
  public :: sum_over_ranks, pass_message
contains
  subroutine sum_over_ranks(vin, vout, d)
    integer, intent(in) :: d
    double precision, intent(in) :: vin(d)
    double precision, intent(out) :: vout(d)
    integer :: ierr

    call MPI_ALLREDUCE(vin, vout, d, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
  end subroutine sum_over_ranks

  ! rank 0 sends, rank 1 receives: 1 when this rank sent, -1 received
  integer function pass_message(buf, b, rank)
    integer, intent(in) :: b, rank
    character, intent(inout) :: buf(b)
    integer :: ierr

    if (rank == 0) then
      call MPI_SEND(buf, b, MPI_CHARACTER, 1, 7, MPI_COMM_WORLD, ierr)
      pass_message = 1
    else
      call MPI_RECV(buf, b, MPI_CHARACTER, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      pass_message = -1
    end if
    if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 4, ierr)
  end function pass_message
end module sites_legacy

module sites_modern
  use mpi_f08
  implicit none
  private
  public :: sum_over_ranks_f08, pass_message_f08
contains
  subroutine sum_over_ranks_f08(vin, vout, d)
    integer, intent(in) :: d
    double precision, intent(in) :: vin(d)
    double precision, intent(out) :: vout(d)
    integer :: ierr

    call MPI_Allreduce(vin, vout, d, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 5, ierr)
  end subroutine sum_over_ranks_f08

  integer function pass_message_f08(buf, b, rank)
    integer, intent(in) :: b, rank
    character, intent(inout) :: buf(b)
    integer :: ierr

    if (rank == 0) then
      call MPI_Send(buf, b, MPI_CHARACTER, 1, 8, MPI_COMM_WORLD, ierr)
      pass_message_f08 = 1
    else
      call MPI_Recv(buf, b, MPI_CHARACTER, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      pass_message_f08 = -1
    end if
    if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 6, ierr)
  end function pass_message_f08
end module sites_modern

program sites_f
  use mpi
  use sites_legacy
  use sites_modern
  implicit none
  integer :: n, d, m, b, rank, nranks, ierr, k
  integer :: allreduce = 0, allreduce_f08 = 0, send = 0, send_f08 = 0, recv = 0, recv_f08 = 0
  double precision, allocatable :: vin(:), vout(:)
  character, allocatable :: buf(:)
  character(len=256) :: line

  n = arg(1, 30)
  d = arg(2, 100)
  m = arg(3, 20)
  b = arg(4, 512)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  if (nranks /= 2) then
    if (rank == 0) write (0, '(a)') 'sites_f: run it on 2 ranks'
    call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  end if
  allocate (vin(d), vout(d), buf(b))
  vin = rank + 1
  buf = 'x'

  do k = 1, n
    call sum_over_ranks(vin, vout, d)
    if (vout(1) /= 3.0d0 .or. vout(d) /= 3.0d0) call MPI_ABORT(MPI_COMM_WORLD, 7, ierr)
    allreduce = allreduce + 1
    call sum_over_ranks_f08(vin, vout, d)
    if (vout(1) /= 3.0d0 .or. vout(d) /= 3.0d0) call MPI_ABORT(MPI_COMM_WORLD, 8, ierr)
    allreduce_f08 = allreduce_f08 + 1
  end do
  do k = 1, m
    if (pass_message(buf, b, rank) > 0) then
      send = send + 1
    else
      recv = recv + 1
    end if
    if (pass_message_f08(buf, b, rank) > 0) then
      send_f08 = send_f08 + 1
    else
      recv_f08 = recv_f08 + 1
    end if
  end do

  write (line, '(7(a,i0),a,i0)') 'rank=', rank, ' allreduce=', allreduce, &
    ' allreduce_f08=', allreduce_f08, ' send=', send, ' send_f08=', send_f08, &
    ' recv=', recv, ' recv_f08=', recv_f08, ' d=', d
  write (*, '(a,a,i0)') trim(line), ' b=', b
  flush (6)
  deallocate (vin, vout, buf)
  call MPI_FINALIZE(ierr)

contains
  integer function arg(i, def)
    integer, intent(in) :: i, def
    character(len=64) :: text
    integer :: stat

    arg = def
    if (command_argument_count() < i) return
    call get_command_argument(i, text)
    read (text, *, iostat=stat) arg
    if (stat /= 0 .or. arg < 1) then
      write (0, '(a,i0,a)') 'sites_f: bad argument ', i, ' ' // trim(text)
      stop 2
    end if
  end function arg
end program sites_f
