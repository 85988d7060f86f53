"""The Python example trainer's gloo group over the MPI job, on one node or many, with nothing
set by hand: rank 0 opens the rendezvous store, every rank learns over MPI where it is, and gloo
is told which interface each rank reaches it by.

Where the store is: MASTER_ADDR (and MASTER_PORT) when set, the user's word; else, on one node,
the loopback; else an address of rank 0's host that every rank reaches (each rank tries rank 0's
IPv4 addresses over TCP; a host name need not resolve on the other nodes). Gloo's interface is
GLOO_SOCKET_IFNAME when set, else the one each rank reached the store's address by.
"""

import fcntl
import os
import socket
import struct
from datetime import timedelta

import stoker
import torch.distributed as dist
from mpi4py import MPI

_SIOCGIFADDR = 0x8915


def host_addresses():
    """This host's IPv4 addresses by interface, as {address: interface}, in interface order."""
    found = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, request)
            except OSError:  # no IPv4 address
                continue
            found[socket.inet_ntoa(answer[20:24])] = name
    return found


def _reached(candidates, port):
    """Of ``candidates`` (rank 0's addresses), those this rank connects to at ``port``, with the
    address of this rank's end of each connection."""
    reached = {}
    for address in candidates:
        try:
            with socket.create_connection((address, port), timeout=5) as c:
                reached[address] = c.getsockname()[0]
        except OSError:
            pass
    return reached


def store_address(comm):
    """(address of rank 0's host every rank reaches, this rank's interface toward it).
    Collective; ConfigError on every rank when no address of rank 0 is reached by all."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)  # this rank's node
    one_node = comm.allreduce(node.size, op=MPI.MIN) == comm.size
    node.Free()
    if one_node:
        return "127.0.0.1", "lo"
    probe = candidates = None
    if comm.rank == 0:
        probe = socket.create_server(("", 0), backlog=min(comm.size, 4096))
        candidates = (list(a for a in host_addresses() if not a.startswith("127.")),
                      probe.getsockname()[1])
    addresses, port = comm.bcast(candidates)
    mine = _reached(addresses, port)
    everyone = comm.allgather(list(mine))
    if probe is not None:
        probe.close()
    common = [a for a in addresses if all(a in reached for reached in everyone)]
    if not common:
        raise stoker.ConfigError(
            f"train.py: no address of rank 0's host ({', '.join(addresses) or 'none'}) is "
            "reached by every rank: set MASTER_ADDR to one that is (and GLOO_SOCKET_IFNAME to "
            "each host's interface toward it)")
    return common[0], host_addresses().get(mine[common[0]])


def start_gloo(comm):
    """torch.distributed's gloo group over the MPI job: the ranks are MPI's; rank 0 opens the
    store (a free port unless MASTER_PORT) and sends its port to the others over MPI. A
    collective waits up
    to an hour for its slowest rank (gloo's default, 30 minutes, could end a run whose rank waits
    on cold storage; stoker-train's MPI waits for ever)."""
    timeout = timedelta(hours=1)
    host = os.environ.get("MASTER_ADDR")
    interface = None
    if not host:
        host, interface = store_address(comm)
    if interface and not os.environ.get("GLOO_SOCKET_IFNAME"):
        os.environ["GLOO_SOCKET_IFNAME"] = interface
    store = None
    if comm.rank == 0:
        store = dist.TCPStore(host, int(os.environ.get("MASTER_PORT", 0)), comm.size, True,
                              timeout, wait_for_workers=False)
    port = comm.bcast(store.port if comm.rank == 0 else None)
    if comm.rank != 0:
        store = dist.TCPStore(host, port, comm.size, False, timeout)
    dist.init_process_group("gloo", store=store, rank=comm.rank, world_size=comm.size,
                            timeout=timeout)
