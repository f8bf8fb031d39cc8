package kvsim.run;

import java.util.List;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.serving.KvManager;
import kvsim.serving.KvRefusals;
import kvsim.serving.ServingEngine;

/**
 * The KV memory of one serving system at its first OOM ({@code serving --snapshot-at-oom}; what an
 * OOM is per system: Note [Serving OOM] in {@link KvRefusals}): the manager's layout, read inside the
 * refusal, before the scheduler preempts or the engine aborts anything, with the refused size, the
 * reason and the simulated time. With {@code fragmentationOnly}, the first refusal for reason
 * {@link OomReason#FRAGMENTATION} instead (a block pool never has one).
 */
public final class ServingOomCapture {
  /**
   * A captured moment.
   *
   * @param layout the KV memory's segments and blocks at the refusal
   * @param sizeBytes the bytes refused
   * @param reason why
   * @param timeNanos the simulated time
   */
  public record Oom(List<SegmentLayout> layout, long sizeBytes, OomReason reason, long timeNanos) {}

  private final boolean fragmentationOnly;
  private boolean installed;
  private Oom oom;

  /** A capture of the first OOM, or of the first fragmentation OOM. */
  public ServingOomCapture(boolean fragmentationOnly) {
    this.fragmentationOnly = fragmentationOnly;
  }

  /** Listens to {@code kv}'s refusals, stamping them with {@code engine}'s time; a manager without {@link KvRefusals} is not listened to. */
  void install(KvManager kv, ServingEngine engine) {
    kv.capability(KvRefusals.class).ifPresent(r -> {
      installed = true;
      r.listenRefusals((sizeBytes, reason) -> {
        if (oom == null && (!fragmentationOnly || reason == OomReason.FRAGMENTATION)) {
          oom = new Oom(r.layout(), sizeBytes, reason, engine.nowNanos());
          r.listenRefusals(null); // the rest of the run pays nothing
        }
      });
    });
  }

  /** Returns whether the system's KV manager reports its refusals (every built-in one does). */
  public boolean installed() {
    return installed;
  }

  /** Returns the captured moment, or null when the run had no such OOM. */
  public Oom oom() {
    return oom;
  }
}
