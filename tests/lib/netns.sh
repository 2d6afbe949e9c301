# netns.sh — "nodes" on one machine for the service tests: each node is a
# network namespace with its own veth pair to a bridge in the root
# namespace, a private 10.x address and its loopback up. Sourced by
# service.sh (which cleans up at exit); needs root and iproute2.
#
#   netns_setup N        creates nodes 1..N: ${NETNS_NAME[i]}, ${NETNS_IP[i]};
#                        the root namespace answers on $NETNS_HOST_IP
#   netns_exec I CMD...  CMD in node I's network namespace only (nsenter:
#                        the mount namespace, /sys and the BPF file systems
#                        stay the machine's, as a daemon of a real node sees them)
#   netns_kill_all       SIGKILL to every process left in the nodes
#   netns_teardown       processes, namespaces, veths and the bridge removed
#
# Names carry the test's pid so two tests never share a namespace; the
# subnet 10.213.K.0/24 is the first K not already routed on this machine.
NETNS_NAME=()
NETNS_IP=()
NETNS_HOST_IP=
NETNS_BRIDGE=

netns_supported() {
	command -v ip >/dev/null || { echo "ip (iproute2) missing"; return 1; }
	command -v nsenter >/dev/null || { echo "nsenter (util-linux) missing"; return 1; }
	[ "$(id -u)" = 0 ] || { echo "network namespaces need root"; return 1; }
	if ! ip netns add "nnk-probe-$$" 2>/dev/null; then
		echo "ip netns add refused (no network namespaces here)"
		return 1
	fi
	ip netns del "nnk-probe-$$"
	if ! ip link add "nnkpb$$" type bridge 2>/dev/null; then
		echo "cannot create a bridge (ip link add type bridge refused)"
		return 1
	fi
	ip link del "nnkpb$$"
}

netns_free_subnet() {
	local k used
	used=$(ip -4 route show | awk '{print $1}')
	for k in $(seq $((213 + $$ % 30)) 254) $(seq 1 254); do
		grep -q "^10\.213\.$k\." <<<"$used" || { echo "$k"; return 0; }
	done
	return 1
}

netns_setup() {
	local n=$1 i k ns veth
	k=$(netns_free_subnet) || { echo "no free 10.213.K.0/24 subnet" >&2; return 1; }
	NETNS_BRIDGE="nnkbr$$"
	NETNS_HOST_IP="10.213.$k.1"
	ip link add "$NETNS_BRIDGE" type bridge || return 1
	ip addr add "$NETNS_HOST_IP/24" dev "$NETNS_BRIDGE" || return 1
	ip link set "$NETNS_BRIDGE" up || return 1
	for i in $(seq 1 "$n"); do
		ns="nnk$$-$i" veth="nnk$$v$i"
		ip netns add "$ns" || return 1
		NETNS_NAME[i]=$ns
		NETNS_IP[i]="10.213.$k.$((10 + i))"
		ip link add "$veth" type veth peer name eth0 netns "$ns" || return 1
		ip link set "$veth" master "$NETNS_BRIDGE" up || return 1
		ip -n "$ns" addr add "${NETNS_IP[i]}/24" dev eth0 || return 1
		ip -n "$ns" link set eth0 up || return 1
		ip -n "$ns" link set lo up || return 1
	done
}

netns_exec() {
	local i=$1
	shift
	nsenter --net="/run/netns/${NETNS_NAME[i]}" -- "$@"
}

netns_kill_all() {
	local i p
	for i in "${!NETNS_NAME[@]}"; do
		for p in $(ip netns pids "${NETNS_NAME[i]}" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
	done
}

netns_teardown() {
	local i t
	netns_kill_all
	for t in 1 2 3 4 5 6 7 8 9 10; do
		[ -z "$(for i in "${!NETNS_NAME[@]}"; do ip netns pids "${NETNS_NAME[i]}" 2>/dev/null; done)" ] && break
		sleep 0.2
	done
	for i in "${!NETNS_NAME[@]}"; do
		ip link del "nnk$$v$i" 2>/dev/null
		ip netns del "${NETNS_NAME[i]}" 2>/dev/null
	done
	[ -n "$NETNS_BRIDGE" ] && ip link del "$NETNS_BRIDGE" 2>/dev/null
	NETNS_NAME=()
	NETNS_BRIDGE=
	return 0
}
