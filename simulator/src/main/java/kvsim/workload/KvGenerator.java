package kvsim.workload;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.PriorityQueue;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.trace.EventSource;
import kvsim.trace.TraceEvent;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;
import org.apache.commons.rng.simple.RandomSource;

/**
 * A KV-shaped L1 workload: LLM requests arrive as a Poisson process; each takes one contiguous,
 * splittable KV buffer of (prompt + output) × KV bytes per token for its whole life, and one
 * short-lived unsplittable activation buffer during its prefill.
 *
 * <ul>
 *   <li>Lengths: two-component log-normal mixtures fitted to a public trace ({@link LengthPreset},
 *       default {@code azure-conv}); arrival rate: the trace's mean rate unless {@code rate} is set.
 *   <li>Prefill time: the compute roofline ({@link Roofline}), 2 × parameters × prompt tokens /
 *       (peak × 0.5).
 *   <li>Lifetime of the KV buffer: prefill time + output tokens × decode step; the decode step is
 *       the bandwidth roofline, weight bytes / (HBM bandwidth × 0.8), unless {@code decode-step-ms}
 *       is set. The lifetime is thus proportional to the output length.
 *   <li>Activation buffer: prompt tokens × MLP width × 2 B × 2 (the gate and up projections of one
 *       layer in fp16), freed when the prefill ends.
 *   <li>Order: each request allocates its activation buffer (id 2k) then its KV buffer (id 2k+1)
 *       at arrival; frees due at the same instant as an arrival come first. Closed-loop: a refused
 *       buffer is never freed.
 * </ul>
 */
public final class KvGenerator implements EventSource {

  /** Default length preset. */
  public static final String DEFAULT_PRESET = "azure-conv";
  /** Default request count. */
  public static final long DEFAULT_REQUESTS = 1000;

  /** A free due at a time; cancelled when its allocation was refused (lazy deletion). */
  private static final class PendingFree {
    final long timeNanos;
    final long seq;
    final long id;
    boolean cancelled;

    PendingFree(long timeNanos, long seq, long id) {
      this.timeNanos = timeNanos;
      this.seq = seq;
      this.id = id;
    }
  }

  private final long requests;
  private final double ratePerSecond;
  private final LengthPreset preset;
  private final ModelPreset model;
  private final long decodeStepNanos;
  private final double prefillNanosPerToken;
  private final UniformRandomProvider rng;
  private final ZigguratSampler.NormalizedGaussian gaussian;
  private final ZigguratSampler.Exponential exponential;
  private final Map<String, Object> description;

  private final PriorityQueue<PendingFree> pending =
      new PriorityQueue<>((a, b) -> a.timeNanos != b.timeNanos ? Long.compare(a.timeNanos, b.timeNanos) : Long.compare(a.seq, b.seq));
  private long seq;
  private long issued;
  private double nextArrivalSeconds;
  private TraceEvent queuedKv;
  private long queuedKvFreeNanos;
  private final java.util.HashMap<Long, PendingFree> freeOf = new java.util.HashMap<>();

  /**
   * Builds the generator from options: {@code preset}, {@code requests}, {@code rate} (requests/s),
   * {@code decode-step-ms}, {@code seed}; the model and device give bytes per token and rooflines.
   */
  public KvGenerator(OptionMap options, ModelPreset model, DeviceSpec device) {
    String presetName = options.string("preset", DEFAULT_PRESET);
    this.preset = LengthPreset.find(presetName);
    if (preset == null) {
      throw options.bad("preset", presetName, "unknown length preset (known: " + String.join(", ", LengthPreset.presets().keySet()) + ")");
    }
    this.requests = options.integer("requests", DEFAULT_REQUESTS, 0, Long.MAX_VALUE);
    this.ratePerSecond = options.number("rate", preset.meanRatePerSecond(), 1e-9, 1e9);
    Roofline roofline = Roofline.of(model, device);
    double defaultStepMs = roofline.memoryNanos(0) / 1e6;
    double stepMs = options.number("decode-step-ms", Math.round(defaultStepMs * 1000) / 1000.0, 0.0, 1e6);
    this.decodeStepNanos = Math.round(stepMs * 1e6);
    long seed = options.integer("seed", ChurnGenerator.DEFAULT_SEED, Long.MIN_VALUE, Long.MAX_VALUE);
    options.requireAllUsed();
    this.model = model;
    this.prefillNanosPerToken = roofline.computeNanos(1);
    this.rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    this.gaussian = ZigguratSampler.NormalizedGaussian.of(rng);
    this.exponential = ZigguratSampler.Exponential.of(rng);
    this.nextArrivalSeconds = exponential.sample() / ratePerSecond;
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("generator", "kv");
    d.put("params", options.effective());
    d.put("model", model.name());
    d.put("kv_bytes_per_token", model.kvBytesPerToken());
    d.put("device", device.text());
    this.description = d;
  }

  @Override
  public TraceEvent next() {
    if (queuedKv != null) {
      TraceEvent kv = queuedKv;
      queuedKv = null;
      schedule(kv.id(), queuedKvFreeNanos);
      return kv;
    }
    long arrivalNanos = issued < requests ? Math.round(nextArrivalSeconds * 1e9) : Long.MAX_VALUE;
    while (!pending.isEmpty() && pending.peek().cancelled) {
      pending.poll();
    }
    PendingFree head = pending.peek();
    if (head != null && head.timeNanos <= arrivalNanos) {
      pending.poll();
      freeOf.remove(head.id);
      return TraceEvent.free(head.timeNanos, head.id, 0);
    }
    if (arrivalNanos == Long.MAX_VALUE) {
      return null;
    }
    long k = issued++;
    nextArrivalSeconds += exponential.sample() / ratePerSecond;
    LengthPreset.Lengths lengths = preset.sample(rng, gaussian);
    int prompt = lengths.promptTokens();
    int output = lengths.outputTokens();
    long prefillNanos = Math.round(prompt * prefillNanosPerToken);
    long kvBytes = (long) (prompt + output) * model.kvBytesPerToken();
    long activationBytes = (long) prompt * model.intermediateSize() * 2L * 2L;
    queuedKv = TraceEvent.alloc(arrivalNanos, 2 * k + 1, kvBytes, Tag.KV, true, 0);
    queuedKvFreeNanos = arrivalNanos + prefillNanos + output * decodeStepNanos;
    schedule(2 * k, arrivalNanos + prefillNanos);
    return TraceEvent.alloc(arrivalNanos, 2 * k, activationBytes, Tag.ACTIVATION, false, 0);
  }

  private void schedule(long id, long timeNanos) {
    PendingFree f = new PendingFree(timeNanos, seq++, id);
    pending.add(f);
    freeOf.put(id, f);
  }

  @Override
  public void acknowledge(TraceEvent event, boolean served) {
    if (!served) {
      PendingFree f = freeOf.remove(event.id());
      if (f != null) {
        f.cancelled = true;
      }
    }
  }

  /** Closed-loop: a refused allocation is never freed. */
  @Override
  public boolean freesRefused() {
    return false;
  }

  @Override
  public String name() {
    return "kv-" + preset.name();
  }

  @Override
  public Map<String, Object> describe() {
    return description;
  }
}
