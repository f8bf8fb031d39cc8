package kvsim.serving;

import java.util.Map;
import java.util.Set;

/**
 * A kind of KV manager as a serving system is assembled from it ({@link ServingSystems}): its name
 * in results, the allocator it is built on, the settings it reads, whether it can hold activations
 * (the naive plan), and how it is built from a system's settings, echoing its parts into a run's
 * summary.
 */
public interface KvManagerFactory {
  /** Returns the name echoed as the summary's {@code kv_manager} part ({@code paged}, {@code contiguous}, …). */
  String name();

  /**
   * Returns the registered allocator the manager is built on, whose options ({@code ALLOCATOR.KEY})
   * the system reads, or null for a manager that takes no allocator options (the paged block
   * manager takes its settings as serving options).
   */
  default String allocator() {
    return null;
  }

  /**
   * Returns the serving settings this manager reads beyond those every system reads (Note
   * [Settings each system reads] in {@link ServingSystems}): {@code block-size}, {@code swap-space}.
   */
  Set<String> reads();

  /** Returns whether the managers built have {@link KvManager.Activations}, so the naive plan can put activations beside the KV. */
  default boolean holdsActivations() {
    return false;
  }

  /**
   * Builds a fresh manager for system {@code system} from settings {@code b}, its scheduler running
   * under {@code config}, and puts its parts (allocator, blocks, reservation, caching…, by
   * result-file name) into {@code parts}.
   *
   * @throws kvsim.core.InputException when the KV memory cannot serve the system
   */
  KvManager create(String system, ServingSystems.Build b, SchedulerConfig config, Map<String, Object> parts);
}
