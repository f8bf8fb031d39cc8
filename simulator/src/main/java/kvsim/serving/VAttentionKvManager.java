package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.Calibration;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;

/**
 * KV memory as vAttention keeps it (Prabhu, Nayak, Mohan, Ramjee, Panwar, ASPLOS 2025, arXiv 2405.04437): each
 * request owns a virtually contiguous KV cache of {@code max_model_len} tokens per layer and per K
 * and V, and physical pages of the {@code vattention} allocator model (built through the registry,
 * 2 MiB by default) are mapped behind it as the sequence grows.
 *
 * <ul>
 *   <li>One page of a layer's K (or V) buffer holds {@code page / (KV heads × head dim × dtype)}
 *       tokens (204 for OPT-13B with 2 MiB pages), and every one of the {@code 2 × layers} buffers
 *       grows together: a growth step maps one page in each, one allocation of {@code 2 × layers ×
 *       page} bytes of the allocator, and gives the sequence that many more tokens.
 *   <li>{@link #allocate} maps the steps the computed tokens need, all or none; a request with
 *       nothing mapped takes its first steps at admission. Preemption and finish unmap every step.
 *   <li>The virtual reservation of {@code max_model_len} tokens costs no physical memory; the L1
 *       model gives each step's pages a virtual range of their own, so kvsim tracks pages and their
 *       mapping calls, not vAttention's virtual addresses.
 *   <li>Latency: the allocator's modelled time (a {@code cuMemMap} per page mapped, as much per page
 *       unmapped), on the iteration's critical path; vAttention's mapping in the background, which
 *       would hide it, and its deferred reclamation are not modelled.
 *   <li>Breakdown, in tokens of the region: token states are the computed tokens; reserved is what
 *       the mapped steps hold up to the final length beyond them; internal waste is the rest of
 *       the mapped bytes (the unused tail of the last step's pages, and each page's bytes beyond its
 *       whole tokens); external waste is the unmapped pages.
 *   <li>No prefix cache, no fork: vLLM v1's scheduler drives it and fans samples out.
 * </ul>
 */
public final class VAttentionKvManager implements KvManager, KvManager.Observable, KvManager.FullSequenceFit, KvRefusals {
  /** vAttention's KV cache as a system part: the {@code vattention} allocator at its default options, no prefix caching. */
  public static final KvManagerFactory FACTORY = new KvManagerFactory() {
    @Override
    public String name() {
      return "vattention";
    }

    @Override
    public Set<String> reads() {
      return Set.of();
    }

    @Override
    public KvManager create(String system, ServingSystems.Build b, SchedulerConfig config, Map<String, Object> parts) {
      VAttentionKvManager kv = VAttentionKvManager.create(Map.of(), b.kvMemoryBytes(), b.device(), b.model(), b.calibration());
      if (kv.capacityTokens() < config.maxModelLen()) {
        throw new InputException(system + ": KV memory of " + Bytes.format(b.kvMemoryBytes()) + " maps one sequence at most " + kv.capacityTokens()
            + " tokens, fewer than max_model_len " + config.maxModelLen() + "; give more --kv-memory or a lower --max-model-len");
      }
      parts.put("allocator", ALLOCATOR);
      parts.put("allocator_options", kv.allocatorOptions());
      parts.put("step_tokens", kv.stepTokens());
      parts.put("prefix_caching", false);
      return kv;
    }
  };

  /** Where a sequence's mapping is kept. */
  private static final Sequence.KvStateKey<Mapping> STATE = new Sequence.KvStateKey<>("vattention");
  /** The allocator model under this manager. */
  public static final String ALLOCATOR = "vattention";

  private final Allocator allocator;
  private final long kvBytesPerToken;
  private final long stepBytes;
  private final int stepTokens;
  private final long regionTokens;
  private final long capacityTokens;
  private final long allocatorNanosAtStart;
  private final Map<String, Object> allocatorOptions;
  private final LinkedHashSet<Sequence> holding = new LinkedHashSet<>();
  private MemoryListener listener;
  /** Hears refusals to running sequences (Note [Serving OOM] in {@link KvRefusals}); null for none. */
  private KvRefusals.Listener refusalListener;
  private long nextTraceId;
  private long steps;
  private long refusals;

  /** One sequence's mapped steps: allocator handles and trace ids. */
  private static final class Mapping {
    long[] handles = new long[4];
    long[] traceIds = new long[4];
    int count;
  }

  private VAttentionKvManager(Allocator allocator, Map<String, Object> allocatorOptions, long regionBytes, ModelPreset model, long pageBytes) {
    this.allocator = allocator;
    this.allocatorOptions = allocatorOptions;
    this.kvBytesPerToken = model.kvBytesPerToken();
    long bufferBytesPerToken = (long) model.kvHeads() * model.headDim() * model.dtypeBytes();
    this.stepTokens = (int) (pageBytes / bufferBytesPerToken);
    if (stepTokens < 1) {
      throw new kvsim.core.InputException("vattention: a page of " + pageBytes + " B holds no token of " + model.name() + "'s K or V buffers");
    }
    this.stepBytes = 2L * model.layers() * pageBytes;
    this.regionTokens = regionBytes / kvBytesPerToken;
    this.capacityTokens = allocator.freeBytes() / stepBytes * stepTokens;
    this.allocatorNanosAtStart = allocator.stats().modelledNanos();
  }

  /** Builds a manager over a fresh {@code vattention} model (its options, default 2 MiB pages) of a KV region of {@code kvMemoryBytes}. */
  public static VAttentionKvManager create(Map<String, String> options, long kvMemoryBytes, DeviceSpec device, ModelPreset model) {
    return create(options, kvMemoryBytes, device, model, Calibration.NONE);
  }

  /** Builds a manager as above whose allocator model takes {@code calibration}'s latencies for {@code vattention}. */
  public static VAttentionKvManager create(Map<String, String> options, long kvMemoryBytes, DeviceSpec device, ModelPreset model,
      Calibration calibration) {
    AllocatorContext context = new AllocatorContext(ALLOCATOR, new Region("kv", 0, kvMemoryBytes), device, model, options, calibration);
    Allocator a = AllocatorRegistry.create(context);
    Map<String, Object> effective = new LinkedHashMap<>(context.effectiveOptions());
    // The model echoes its page size, default included, among its options in force.
    return new VAttentionKvManager(a, effective, kvMemoryBytes, model, ((Number) effective.get("page-size")).longValue());
  }

  /** Returns the allocator's options in force. */
  public Map<String, Object> allocatorOptions() {
    return allocatorOptions;
  }

  /** Returns the tokens one growth step maps (per layer and per K or V: one page's worth). */
  public int stepTokens() {
    return stepTokens;
  }

  /** Returns the allocator model under the manager. */
  public Allocator allocator() {
    return allocator;
  }

  private static Mapping of(Sequence s) {
    return s.kvState(STATE);
  }

  @Override
  public void add(Sequence s) {
    s.setKvState(STATE, new Mapping());
  }

  @Override
  public int lookup(Sequence s) {
    return 0;
  }

  /**
   * vLLM v1's full-prompt admission gate over vAttention's pages (Note [Full-prompt admission
   * gate] in {@link VllmV1Scheduler}): the growth steps the sequence's whole current length needs
   * beyond those mapped, against the whole steps the allocator's free bytes hold.
   */
  @Override
  public boolean canFitFullSequence(Sequence s) {
    long want = ((long) s.numTokens() + stepTokens - 1) / stepTokens - of(s).count;
    return want <= allocator.freeBytes() / stepBytes;
  }

  @Override
  public boolean allocate(Sequence s, int numNewTokens) {
    if (numNewTokens <= 0 || (long) s.numComputedTokens() + numNewTokens > s.numTokens()) {
      throw new IllegalArgumentException(numNewTokens + " new tokens for " + s);
    }
    int needed = s.numComputedTokens() + numNewTokens;
    Mapping m = of(s);
    int before = m.count;
    int want = (needed + stepTokens - 1) / stepTokens;
    while (m.count < want) {
      nextTraceId++;
      if (listener != null) {
        listener.allocated(nextTraceId, stepBytes, Tag.KV, false);
      }
      AllocOutcome out = allocator.allocate(new AllocRequest(stepBytes, Tag.KV, false, 0));
      if (!(out instanceof AllocOutcome.Allocated a)) {
        refusals++;
        if (refusalListener != null && s.numComputedTokens() > 0) {
          // A running sequence's next step (Note [Serving OOM] in KvRefusals), heard before the roll-back.
          AllocOutcome.OutOfMemory o = (AllocOutcome.OutOfMemory) out;
          refusalListener.refused(o.requestedBytes(), o.reason());
        }
        while (m.count > before) {
          unmapLast(m);
        }
        return false;
      }
      if (m.count == m.handles.length) {
        m.handles = java.util.Arrays.copyOf(m.handles, m.count * 2);
        m.traceIds = java.util.Arrays.copyOf(m.traceIds, m.count * 2);
      }
      m.handles[m.count] = a.handle();
      m.traceIds[m.count] = nextTraceId;
      m.count++;
      steps++;
    }
    if (m.count > 0) {
      holding.add(s);
    }
    s.advanceComputedTo(needed);
    return true;
  }

  private void unmapLast(Mapping m) {
    m.count--;
    allocator.free(m.handles[m.count]);
    if (listener != null) {
      listener.freed(m.traceIds[m.count]);
    }
  }

  @Override
  public void append(Sequence s, int token) {}

  @Override
  public void preempt(Sequence s) {
    release(s);
  }

  @Override
  public void finish(Sequence s) {
    release(s);
  }

  private void release(Sequence s) {
    Mapping m = of(s);
    while (m.count > 0) {
      unmapLast(m);
    }
    holding.remove(s);
  }

  @Override
  public long capacityTokens() {
    return capacityTokens;
  }

  @Override
  public long modelledNanos() {
    return allocator.stats().modelledNanos() - allocatorNanosAtStart;
  }

  @Override
  public void listen(MemoryListener listener) {
    this.listener = listener;
  }

  @Override
  public void listenRefusals(KvRefusals.Listener listener) {
    this.refusalListener = listener;
  }

  @Override
  public java.util.List<kvsim.alloc.SegmentLayout> layout() {
    return allocator.layout();
  }

  @Override
  public void breakdown(long[] out) {
    long tokens = 0;
    long future = 0;
    long waste = 0;
    for (Sequence s : holding) {
      Mapping m = of(s);
      long held = m.count * stepBytes / kvBytesPerToken;
      long usable = Math.min((long) m.count * stepTokens, s.finalTokens());
      tokens += s.numComputedTokens();
      future += usable - s.numComputedTokens();
      waste += held - usable;
    }
    out[0] = tokens;
    out[1] = future;
    out[2] = waste;
    // Free: what the allocator could still hand out; the rest is its rounding and metadata (and the
    // naive plan's activations). Both floors leave the rest non-negative: the allocated bytes hold
    // at least the sequences' slots.
    out[3] = allocator.freeBytes() / kvBytesPerToken;
    out[4] = regionTokens - tokens - future - waste - out[3];
  }

  /** Returns {@code steps_mapped} (growth steps, each {@code 2 × layers} pages), {@code steps_refused} and the allocator's page counters. */
  @Override
  public Map<String, Long> counters() {
    Map<String, Long> c = new LinkedHashMap<>();
    c.put("steps_mapped", steps);
    c.put("steps_refused", refusals);
    c.putAll(allocator.extraMetrics());
    return c;
  }

  @Override
  public void checkInvariants() {
    allocator.checkInvariants();
    long live = 0;
    for (Sequence s : holding) {
      Mapping m = of(s);
      if (s.numComputedTokens() > (long) m.count * stepTokens) {
        throw new IllegalStateException(s + " computed more than its " + m.count + " mapped steps hold");
      }
      live += m.count;
    }
    if (allocator.stats().liveAllocations() != live) {
      throw new IllegalStateException("the allocator holds " + allocator.stats().liveAllocations() + " allocations; the sequences map " + live + " steps");
    }
  }
}
