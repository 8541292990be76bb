# What CUDA's virtual memory calls cost by handle size (docs/expandable.md, "Growth"):
# map 1 GiB as handles of 2, 8, 32 and 128 MiB, 3 times each, and give it back.
# GPU only, libcuda through ctypes: python3 python/bench/vmm_cost.py
import ctypes as C, time
cu = C.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0: raise SystemExit("%s: CUresult %d" % (what, r))
ck(cu.cuInit(0), "init")
dev = C.c_int(); ck(cu.cuDeviceGet(C.byref(dev), 0), "dev")
ctx = C.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "retain"); ck(cu.cuCtxSetCurrent(ctx), "set")
class Loc(C.Structure): _fields_ = [("type", C.c_int), ("id", C.c_int)]
class Flags(C.Structure): _fields_ = [("compressionType", C.c_ubyte), ("gpuDirectRDMACapable", C.c_ubyte), ("usage", C.c_ushort), ("reserved", C.c_ubyte * 4)]
class Prop(C.Structure): _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", Loc), ("win32HandleMetaData", C.c_void_p), ("allocFlags", Flags)]
class Access(C.Structure): _fields_ = [("location", Loc), ("flags", C.c_int)]
prop = Prop(); prop.type = 1; prop.location = Loc(1, 0)
acc = Access(Loc(1, 0), 3)
MiB = 1 << 20; TOTAL = 1024 * MiB
va = C.c_ulonglong()
ck(cu.cuMemAddressReserve(C.byref(va), C.c_size_t(TOTAL), C.c_size_t(0), C.c_ulonglong(0), C.c_ulonglong(0)), "reserve")
for hs in (2, 8, 32, 128):
    for rep in range(3):
        sz = hs * MiB; n = TOTAL // sz; hs_ = []
        t0 = time.perf_counter()
        for i in range(n):
            h = C.c_ulonglong(); ck(cu.cuMemCreate(C.byref(h), C.c_size_t(sz), C.byref(prop), C.c_ulonglong(0)), "create")
            hs_.append(h)
        t1 = time.perf_counter()
        for i, h in enumerate(hs_):
            ck(cu.cuMemMap(C.c_ulonglong(va.value + i * sz), C.c_size_t(sz), C.c_size_t(0), h, C.c_ulonglong(0)), "map")
        t2 = time.perf_counter()
        ck(cu.cuMemSetAccess(C.c_ulonglong(va.value), C.c_size_t(TOTAL), C.byref(acc), C.c_size_t(1)), "access")
        t3 = time.perf_counter()
        ck(cu.cuCtxSynchronize(), "sync")
        t4 = time.perf_counter()
        for i, h in enumerate(hs_):
            ck(cu.cuMemUnmap(C.c_ulonglong(va.value + i * sz), C.c_size_t(sz)), "unmap")
        t5 = time.perf_counter()
        for h in hs_:
            ck(cu.cuMemRelease(h), "release")
        t6 = time.perf_counter()
        print("1 GiB as %3d MiB handles (%4d): create %6.1f ms, map %6.1f, setaccess %6.1f, unmap %6.1f, release %6.1f; total %6.1f ms"
              % (hs, n, (t1-t0)*1e3, (t2-t1)*1e3, (t3-t2)*1e3, (t5-t4)*1e3, (t6-t5)*1e3, (t6-t0-(t4-t3))*1e3), flush=True)
