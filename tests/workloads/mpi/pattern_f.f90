! pattern_f — the Fortran variant of pattern.c: the same pattern, smaller,
! through the Fortran bindings (`use mpi`). In Open MPI those bindings call
! PMPI_* of libmpi, in MPICH MPI_* of libmpich (the same address as PMPI_*):
! a profiler that probes the C library must count every call once.
!
! usage: mpirun -n P pattern_f [UNITS_MS N D M B]
!   defaults 100 40 500 20 1024: UNITS_MS CPU milliseconds per compute unit,
!   N MPI_ALLREDUCE of D MPI_DOUBLE_PRECISION, M MPI_SEND/MPI_RECV of B
!   MPI_CHARACTER from even rank r to rank r + 1, one MPI_BARRIER at the end.
!
! Rank r computes r + 1 units in compute_units(), over ROUNDS rounds. Each
! rank prints the same line as pattern.c:
!   rank=R size=S compute_s=X mpi_s=Y allreduce_calls=.. send_calls=..
!   recv_calls=.. barrier_calls=.. sent_bytes=.. compute_cpu_s=Z
! (here compute_cpu_s is process CPU time from cpu_time()).
module pattern_work
  implicit none
  integer, parameter :: rounds = 10
  double precision :: unit_slice_s = 0.01d0
  double precision :: sink = 0.0d0
contains
  ! n slices of pure CPU: a dependent floating-point chain
  subroutine compute_units(n)
    integer, intent(in) :: n
    double precision :: t, t_end, x
    integer :: i

    call cpu_time(t)
    t_end = t + n * unit_slice_s
    x = sink + 1.0d0
    do
      do i = 1, 20000
        x = x * 1.0000001d0 + 0.5d0 / (x + 1.0d0)
      end do
      call cpu_time(t)
      if (t >= t_end) exit
    end do
    sink = x
  end subroutine compute_units

  integer function arg(i, def, minimum)
    integer, intent(in) :: i, def, minimum
    character(len=64) :: text
    integer :: stat

    arg = def
    if (command_argument_count() < i) return
    call get_command_argument(i, text)
    read (text, *, iostat=stat) arg
    if (stat /= 0 .or. arg < minimum) then
      write (0, '(a,i0,a)') 'pattern_f: bad argument ', i, ' ' // trim(text)
      stop 2
    end if
  end function arg

  ! "%.6f" as C prints it (f0.6 would drop the leading zero)
  character(len=32) function seconds(x)
    double precision, intent(in) :: x
    write (seconds, '(f32.6)') x
    seconds = adjustl(seconds)
  end function seconds

  ! the share of total for round i (0-based) when spread over rounds
  integer function share(total, i)
    integer, intent(in) :: total, i
    share = total / rounds
    if (i < mod(total, rounds)) share = share + 1
  end function share
end module pattern_work

program pattern_f
  use mpi
  use pattern_work
  implicit none
  integer, parameter :: tag = 7
  integer :: units_ms, n, d, m, b, rank, nranks, partner, ierr, round, k
  integer :: allreduce_calls = 0, send_calls = 0, recv_calls = 0, barrier_calls = 0
  integer(kind=8) :: sent_bytes = 0
  double precision :: mpi_s = 0, compute_s = 0, compute_cpu_s = 0, t0, c0, c1
  double precision, allocatable :: vin(:), vout(:)
  character, allocatable :: buf(:)
  character :: seq
  character(len=512) :: line

  units_ms = arg(1, 100, 0)
  n = arg(2, 40, 0)
  d = arg(3, 500, 1)
  m = arg(4, 20, 0)
  b = arg(5, 1024, 1)

  call MPI_INIT(ierr)
  t0 = MPI_WTIME()
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  mpi_s = mpi_s + (MPI_WTIME() - t0)
  unit_slice_s = units_ms / 1000.0d0 / rounds
  partner = -1
  if (mod(rank, 2) == 0 .and. rank + 1 < nranks) partner = rank + 1
  if (mod(rank, 2) == 1) partner = rank - 1
  allocate (vin(d), vout(d), buf(b))
  vin = rank + 1

  do round = 0, rounds - 1
    t0 = MPI_WTIME()
    call cpu_time(c0)
    call compute_units(rank + 1)
    call cpu_time(c1)
    compute_s = compute_s + (MPI_WTIME() - t0)
    compute_cpu_s = compute_cpu_s + (c1 - c0)

    do k = 1, share(n, round)
      t0 = MPI_WTIME()
      call MPI_ALLREDUCE(vin, vout, d, MPI_DOUBLE_PRECISION, MPI_SUM, &
             MPI_COMM_WORLD, ierr)
      mpi_s = mpi_s + (MPI_WTIME() - t0)
      if (ierr /= MPI_SUCCESS .or. vout(1) /= nranks * (nranks + 1) / 2.0d0 &
          .or. vout(d) /= vout(1)) call MPI_ABORT(MPI_COMM_WORLD, 4, ierr)
      allreduce_calls = allreduce_calls + 1
      sent_bytes = sent_bytes + int(d, 8) * 8
    end do

    if (partner >= 0) then
      do k = 1, share(m, round)
        seq = achar(mod(send_calls + recv_calls, 128))
        if (mod(rank, 2) == 0) then
          buf = seq
          t0 = MPI_WTIME()
          call MPI_SEND(buf, b, MPI_CHARACTER, partner, tag, &
                  MPI_COMM_WORLD, ierr)
          mpi_s = mpi_s + (MPI_WTIME() - t0)
          send_calls = send_calls + 1
          sent_bytes = sent_bytes + b
        else
          t0 = MPI_WTIME()
          call MPI_RECV(buf, b, MPI_CHARACTER, partner, tag, &
                  MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
          mpi_s = mpi_s + (MPI_WTIME() - t0)
          if (buf(1) /= seq .or. buf(b) /= seq) &
            call MPI_ABORT(MPI_COMM_WORLD, 5, ierr)
          recv_calls = recv_calls + 1
        end if
        if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
      end do
    end if
  end do
  t0 = MPI_WTIME()
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  mpi_s = mpi_s + (MPI_WTIME() - t0)
  barrier_calls = barrier_calls + 1

  write (line, '(a,i0,a,i0,a,a,a,a,a,i0,a,i0,a,i0,a,i0,a,i0,a,a)') &
    'rank=', rank, ' size=', nranks, ' compute_s=', trim(seconds(compute_s)), &
    ' mpi_s=', trim(seconds(mpi_s)), &
    ' allreduce_calls=', allreduce_calls, ' send_calls=', send_calls, &
    ' recv_calls=', recv_calls, ' barrier_calls=', barrier_calls, &
    ' sent_bytes=', sent_bytes, ' compute_cpu_s=', trim(seconds(compute_cpu_s))
  write (*, '(a)') trim(line)
  flush (6)
  deallocate (vin, vout, buf)
  call MPI_FINALIZE(ierr)
end program pattern_f
