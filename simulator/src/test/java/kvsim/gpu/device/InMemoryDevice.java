package kvsim.gpu.device;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A {@link GpuDevice} in memory, for tests: it records every call, places allocations and physical
 * memory first-fit in {@code totalBytes} of simulated memory (so its free memory and its largest
 * allocatable block are known), refuses what does not fit with {@link DeviceOutOfMemoryException},
 * and throws {@link IllegalStateException} on every misuse a real driver would reject or that would
 * corrupt memory: freeing what is not live, mapping over a mapping or outside a reservation,
 * releasing mapped memory, unmapping what is not one whole mapping, copying outside live memory.
 */
public final class InMemoryDevice implements GpuDevice {
  /** Where simulated device memory starts. */
  public static final long MEMORY_BASE = 1L << 32;
  /** Where reservations start, apart from the memory. */
  public static final long VIRTUAL_BASE = 1L << 44;

  private final long totalBytes;
  private final long granularityBytes;
  /** Occupied physical ranges: start → end (allocations and physical handles alike). */
  private final TreeMap<Long, Long> used = new TreeMap<>();
  private final Map<Long, Long> allocations = new HashMap<>();
  private final Map<Long, long[]> physical = new HashMap<>(); // handle → {start, size, mapped 0/1}
  private final TreeMap<Long, Long> reservations = new TreeMap<>(); // start → end
  private final TreeMap<Long, long[]> mappings = new TreeMap<>(); // address → {end, handle}
  private final List<String> calls = new ArrayList<>();
  private long nextVirtual = VIRTUAL_BASE;
  private long nextHandle = 1;
  private long usedBytes;
  private boolean closed;

  public InMemoryDevice(long totalBytes, long granularityBytes) {
    this.totalBytes = totalBytes;
    this.granularityBytes = granularityBytes;
  }

  /** Returns the calls made so far, one string each ({@code "allocate 4096"}). */
  public List<String> calls() {
    return List.copyOf(calls);
  }

  /** Returns how many allocations, physical handles, mappings and reservations are live. */
  public int liveCount() {
    return allocations.size() + physical.size() + mappings.size() + reservations.size();
  }

  @Override
  public DeviceInfo info() {
    return new DeviceInfo("in-memory device", "0.0", "0.0", totalBytes, granularityBytes, "0.0");
  }

  @Override
  public long freeBytes() {
    return totalBytes - usedBytes;
  }

  private long place(long sizeBytes) throws DeviceOutOfMemoryException {
    if (sizeBytes <= 0) {
      throw new IllegalStateException("allocation of " + sizeBytes + " bytes");
    }
    long cursor = MEMORY_BASE;
    for (Map.Entry<Long, Long> e : used.entrySet()) {
      if (e.getKey() - cursor >= sizeBytes) {
        break;
      }
      cursor = e.getValue();
    }
    if (cursor + sizeBytes > MEMORY_BASE + totalBytes) {
      throw new DeviceOutOfMemoryException(sizeBytes);
    }
    used.put(cursor, cursor + sizeBytes);
    usedBytes += sizeBytes;
    return cursor;
  }

  private void unplace(long start) {
    Long end = used.remove(start);
    usedBytes -= end - start;
  }

  @Override
  public long allocate(long sizeBytes) throws DeviceOutOfMemoryException {
    check();
    calls.add("allocate " + sizeBytes);
    long a = place(sizeBytes);
    allocations.put(a, sizeBytes);
    return a;
  }

  @Override
  public void free(long address) {
    check();
    calls.add("free");
    if (allocations.remove(address) == null) {
      throw new IllegalStateException("free of " + address + ", which is not a live allocation");
    }
    unplace(address);
  }

  @Override
  public long reserve(long sizeBytes) {
    check();
    calls.add("reserve " + sizeBytes);
    granular(sizeBytes);
    long a = nextVirtual;
    nextVirtual += sizeBytes + granularityBytes;
    reservations.put(a, a + sizeBytes);
    return a;
  }

  @Override
  public void release(long address, long sizeBytes) {
    check();
    calls.add("release " + sizeBytes);
    Long end = reservations.get(address);
    if (end == null || end - address != sizeBytes) {
      throw new IllegalStateException("release of " + sizeBytes + " bytes at " + address + ", which is not a reservation");
    }
    Map.Entry<Long, long[]> m = mappings.ceilingEntry(address);
    if (m != null && m.getKey() < end) {
      throw new IllegalStateException("release of a reservation with mappings in it");
    }
    reservations.remove(address);
  }

  @Override
  public long createPhysical(long sizeBytes) throws DeviceOutOfMemoryException {
    check();
    calls.add("create " + sizeBytes);
    granular(sizeBytes);
    long start = place(sizeBytes);
    long h = nextHandle++;
    physical.put(h, new long[] {start, sizeBytes, 0});
    return h;
  }

  @Override
  public void releasePhysical(long handle) {
    check();
    calls.add("release-physical");
    long[] p = physical.get(handle);
    if (p == null || p[2] != 0) {
      throw new IllegalStateException("release of physical memory " + handle + (p == null ? ", which is not live" : ", which is mapped"));
    }
    physical.remove(handle);
    unplace(p[0]);
  }

  @Override
  public void map(long address, long sizeBytes, long handle) {
    check();
    calls.add("map " + sizeBytes);
    long[] p = physical.get(handle);
    if (p == null || p[2] != 0 || sizeBytes != p[1]) {
      throw new IllegalStateException("map of handle " + handle + ": not live, already mapped, or of another size");
    }
    Map.Entry<Long, Long> r = reservations.floorEntry(address);
    if (r == null || address + sizeBytes > r.getValue() || address % granularityBytes != 0) {
      throw new IllegalStateException("map at " + address + " for " + sizeBytes + " bytes: not inside a reservation, or unaligned");
    }
    Map.Entry<Long, long[]> before = mappings.floorEntry(address + sizeBytes - 1);
    if (before != null && before.getValue()[0] > address) {
      throw new IllegalStateException("map at " + address + " overlaps a mapping at " + before.getKey());
    }
    mappings.put(address, new long[] {address + sizeBytes, handle});
    p[2] = 1;
  }

  @Override
  public void unmap(long address, long sizeBytes) {
    check();
    calls.add("unmap " + sizeBytes);
    long[] m = mappings.get(address);
    if (m == null || m[0] - address != sizeBytes) {
      throw new IllegalStateException("unmap of " + sizeBytes + " bytes at " + address + ", which is not one whole mapping");
    }
    mappings.remove(address);
    physical.get(m[1])[2] = 0;
  }

  @Override
  public void copyDeviceToDevice(long target, long source, long sizeBytes) {
    check();
    calls.add("copy-d2d " + sizeBytes);
    requireLive(target, sizeBytes);
    requireLive(source, sizeBytes);
  }

  @Override
  public void copyHostToDevice(long target, long sizeBytes) {
    check();
    calls.add("copy-h2d " + sizeBytes);
    requireLive(target, sizeBytes);
  }

  @Override
  public void copyDeviceToHost(long source, long sizeBytes) {
    check();
    calls.add("copy-d2h " + sizeBytes);
    requireLive(source, sizeBytes);
  }

  private void requireLive(long address, long sizeBytes) {
    Map.Entry<Long, Long> a = used.floorEntry(address);
    boolean inAllocation = a != null && allocations.containsKey(a.getKey()) && address + sizeBytes <= a.getValue();
    Map.Entry<Long, long[]> m = mappings.floorEntry(address);
    boolean inMapping = m != null && address + sizeBytes <= m.getValue()[0];
    if (!inAllocation && !inMapping) {
      throw new IllegalStateException("copy of " + sizeBytes + " bytes at " + address + " outside live memory");
    }
  }

  @Override
  public void synchronize() {
    check();
  }

  @Override
  public void close() {
    closed = true;
  }

  private void granular(long sizeBytes) {
    if (sizeBytes <= 0 || sizeBytes % granularityBytes != 0) {
      throw new IllegalStateException(sizeBytes + " bytes is not a positive multiple of the granularity " + granularityBytes);
    }
  }

  private void check() {
    if (closed) {
      throw new IllegalStateException("the device is closed");
    }
  }
}
