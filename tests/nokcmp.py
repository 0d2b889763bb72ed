#!/usr/bin/env python3
"""nokcmp.py COMMAND [ARGS...]: runs COMMAND where kcmp(2) fails with
EPERM, as under a container's seccomp profile without CAP_SYS_PTRACE: a
real seccomp filter, inherited by everything COMMAND starts."""
import ctypes
import os
import platform
import sys

KCMP = {'x86_64': 312, 'aarch64': 272}[platform.machine()]
AUDIT_ARCH = {'x86_64': 0xC000003E, 'aarch64': 0xC00000B7}[platform.machine()]


class SockFilter(ctypes.Structure):
    _fields_ = [('code', ctypes.c_ushort), ('jt', ctypes.c_ubyte),
                ('jf', ctypes.c_ubyte), ('k', ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.POINTER(SockFilter))]


LD_ABS, JEQ, RET = 0x20, 0x15, 0x06
ALLOW, ERRNO_EPERM = 0x7FFF0000, 0x00050000 | 1
prog = [
    SockFilter(LD_ABS, 0, 0, 4),            # seccomp_data.arch
    SockFilter(JEQ, 1, 0, AUDIT_ARCH),
    SockFilter(RET, 0, 0, ALLOW),
    SockFilter(LD_ABS, 0, 0, 0),            # seccomp_data.nr
    SockFilter(JEQ, 0, 1, KCMP),
    SockFilter(RET, 0, 0, ERRNO_EPERM),
    SockFilter(RET, 0, 0, ALLOW),
]
filters = (SockFilter * len(prog))(*prog)
fprog = SockFprog(len(prog), filters)
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit('nokcmp: seccomp: ' + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
