package kvsim.devicemodel;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The split of a device into regions (README, "Memory plan"). From the bottom of the address space:
 * an optional static weights region, the region under test (the allocator being compared manages
 * it), and an optional activations region at the top that takes every request that may not be split
 * into pages.
 *
 * <p>The L1 default is the whole device as one region under test. vLLM's two-pool layout is the
 * plan with a weights region and an activations region beside the KV region.
 *
 * @param device the device the plan divides
 * @param weightsBytes bytes set aside for model weights (never allocated from)
 * @param activationsBytes bytes of the activations region, 0 for none
 */
public record MemoryPlan(DeviceSpec device, long weightsBytes, long activationsBytes) {
  public MemoryPlan {
    if (weightsBytes < 0 || activationsBytes < 0) {
      throw new IllegalArgumentException("region sizes must not be negative");
    }
    // weights + activations >= capacity, written so that the sum of two huge sizes cannot wrap.
    if (weightsBytes >= device.capacityBytes() || activationsBytes >= device.capacityBytes() - weightsBytes) {
      throw new IllegalArgumentException(
          "weights ("
              + weightsBytes
              + " B) and activations ("
              + activationsBytes
              + " B) leave nothing of the "
              + device.capacityBytes()
              + " B device for the region under test");
    }
  }

  /**
   * Returns the bytes left for a serving run's KV cache on {@code device} beside {@code
   * weightsBytes} of weights and {@code activationsBytes} of activations kept apart from it: the
   * device's capacity less both, negative when they alone overflow it (Note [KV memory must fit]).
   *
   * <p>Note [KV memory must fit]: vLLM sizes its KV cache from what is left of the device once the
   * weights are loaded and a profiling run has measured the activation peak, so its cache never
   * overlaps them; a KV size given outright ({@code --kv-memory}) skips that arithmetic, and a run
   * with 40 GiB of KV beside Llama-3-70B's 131 GiB of weights on one 80 GiB device would simulate a
   * machine that cannot exist. So a given KV size is checked against the same layout: weights, the
   * activations where the plan keeps them in a region of their own (vLLM's two-pool layout; the
   * naive plan allocates them inside the KV region, so nothing beside it), and the KV region must
   * fit the whole device. The whole device, not a {@code gpu_memory_utilization} share of it: the
   * size given replaces that share, and what the share keeps back (the CUDA context, other
   * processes) is not modelled.
   */
  public static long kvRoomBytes(DeviceSpec device, long weightsBytes, long activationsBytes) {
    if (weightsBytes < 0 || activationsBytes < 0) {
      throw new IllegalArgumentException("region sizes must not be negative");
    }
    return device.capacityBytes() - weightsBytes - activationsBytes;
  }

  /** The whole device as one region under test. */
  public static MemoryPlan whole(DeviceSpec device) {
    return new MemoryPlan(device, 0, 0);
  }

  /** Returns the region the allocator under test manages. */
  public Region testedRegion() {
    return new Region(
        activationsBytes == 0 && weightsBytes == 0 ? "all" : "kv",
        weightsBytes,
        device.capacityBytes() - weightsBytes - activationsBytes);
  }

  /** Returns the activations region, if the plan has one. */
  public Optional<Region> activationsRegion() {
    if (activationsBytes == 0) {
      return Optional.empty();
    }
    return Optional.of(new Region("activations", device.capacityBytes() - activationsBytes, activationsBytes));
  }

  /** Returns every region in address order. */
  public List<Region> regions() {
    List<Region> out = new ArrayList<>();
    if (weightsBytes > 0) {
      out.add(new Region("weights", 0, weightsBytes));
    }
    out.add(testedRegion());
    activationsRegion().ifPresent(out::add);
    return out;
  }
}
