package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.Calibration;
import kvsim.alloc.Capability;
import kvsim.alloc.OomReason;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.devicemodel.CopyBandwidths;
import kvsim.devicemodel.CopyCostModel;
import kvsim.registry.AllocatorRegistry;

/**
 * KV memory as the pre-paging systems keep it: each sequence's KV cache is one contiguous buffer,
 * taken in a single unsplittable request from a {@link Capability#CONTIGUOUS} allocator model (built
 * through the registry) that manages the whole KV region. How many tokens the buffer holds is the
 * {@link Reservation} policy's choice; the vLLM paper's Orca baselines reserve at admission and
 * never grow, a plain PyTorch program grows by copying.
 *
 * <ul>
 *   <li>A waiting sequence's first {@link #allocate} reserves its buffer: the policy's tokens ×
 *       the model's KV bytes per token, or fails and changes nothing. While the computed tokens stay
 *       within the reservation, later calls succeed without touching the allocator.
 *   <li>{@link Reservation#GROW} alone lets a sequence outgrow its buffer: the manager allocates a
 *       new one of twice the tokens (at least what is needed, at most {@code max_model_len}), counts
 *       a copy of the computed tokens' bytes, and frees the old one; if the new buffer cannot be had
 *       it fails and the sequence keeps the old one. For the other policies a sequence never
 *       outgrows its reservation (it is at least the final length), and doing so is a bug.
 *   <li>Latency: the allocator's own modelled time ({@code stats().modelledNanos()}), plus, for each
 *       copy, its bytes read and written once over HBM, timed by the copy-cost model given ({@link
 *       CopyBandwidths} by default: the roofline's achieved share of peak bandwidth, {@link
 *       #copyBytesPerSecond(DeviceSpec)}; a calibration's {@code copies} section replaces it).
 *   <li>Breakdown, in tokens of the region ({@code region bytes / KV bytes per token}): token
 *       states are the computed tokens; reserved is {@code min(reservation, final length) −
 *       computed}, the part of the buffer that tokens still to come will fill; internal waste is
 *       {@code reservation − min(reservation, final length)}, reserved but never to be filled;
 *       external waste is the rest: free memory, memory the allocator keeps cached, and the
 *       allocator's rounding (allocated minus requested bytes: a buddy block's power-of-two
 *       padding, PyTorch's 512 B rounding and unsplit remainders). Rounding is counted as external
 *       because no policy asked for it and no sequence can use it; the policy's own
 *       over-reservation is internal.
 *   <li>No prefix cache: {@link #lookup} returns 0.
 *   <li>Sequence groups ({@code n} &gt; 1, beam search): every sequence holds its own copy of the
 *       prompt. A forking group's lead reserves a buffer for each of the group's sequences at
 *       admission, all or none (the policy's tokens each); a {@link #fork} copies the source's
 *       computed tokens into the target's buffer (growing it first under {@link
 *       Reservation#GROW}), timed like a growth copy.
 * </ul>
 */
public final class ContiguousKvManager implements KvManager, KvManager.Forking, KvManager.Activations, KvManager.Observable, KvManager.GroupCounting,
    KvRefusals {
  /**
   * A contiguous KV manager as a system part: one buffer per sequence in the registered allocator
   * {@code allocator} (its options read as {@code ALLOCATOR.KEY}) under {@code reservation}; it can
   * hold an iteration's activations (the naive plan). The KV memory must give one sequence {@code
   * max_model_len} tokens (while it grows, old and new buffer).
   */
  public static KvManagerFactory factory(String allocator, Reservation reservation) {
    return new Factory(allocator, reservation);
  }

  private record Factory(String allocator, Reservation reservation) implements KvManagerFactory {
    @Override
    public String name() {
      return "contiguous";
    }

    @Override
    public Set<String> reads() {
      return Set.of();
    }

    @Override
    public boolean holdsActivations() {
      return true;
    }

    @Override
    public KvManager create(String system, ServingSystems.Build b, SchedulerConfig config, Map<String, Object> parts) {
      ContiguousKvManager kv = ContiguousKvManager.create(allocator, b.allocatorOptions().getOrDefault(allocator, Map.of()), b.kvMemoryBytes(), b.device(),
          b.model(), reservation, config.maxModelLen(), b.calibration());
      if (kv.capacityTokens() < config.maxModelLen()) {
        throw new InputException(system + ": " + allocator + " over KV memory of " + Bytes.format(b.kvMemoryBytes()) + " gives one sequence at most "
            + kv.capacityTokens() + " tokens" + (reservation == Reservation.GROW ? " while it grows (old and new buffer)" : "")
            + ", fewer than max_model_len " + config.maxModelLen() + "; give more --kv-memory or a lower --max-model-len");
      }
      parts.put("allocator", allocator);
      parts.put("allocator_options", kv.allocatorOptions());
      parts.put("reservation", reservation.label());
      parts.put("prefix_caching", false);
      return kv;
    }
  }

  /** Where a sequence's buffer is kept. */
  static final Sequence.KvStateKey<Buffer> STATE = new Sequence.KvStateKey<>("contiguous");

  /** How many tokens a sequence's buffer holds. */
  public enum Reservation {
    /** {@code max_model_len} tokens at admission (Orca(Max): 2,048 slots for OPT). */
    MAX,
    /**
     * The next power of two of the final length (prompt + output) at admission, at most {@code
     * max_model_len}: at most 2× over-reservation (Orca(Pow2)).
     */
    POW2,
    /** Exactly the final length, prompt + output, at admission (Orca(Oracle)). */
    ORACLE,
    /**
     * The prompt at admission; when the sequence outgrows its buffer, a buffer of twice the tokens
     * (at most {@code max_model_len}), a copy, and a free of the old one.
     */
    GROW;

    /** Returns the lower-case name used in results ({@code max}, {@code pow2}, …). */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** One sequence's buffer. */
  private static final class Buffer {
    long handle;
    long traceId;
    int reservedTokens;
  }

  private final Allocator allocator;
  private final Reservation reservation;
  private final long kvBytesPerToken;
  private final int maxModelLen;
  private final CopyCostModel copyCost;
  private final long regionTokens;
  private final long capacityTokens;
  private final long allocatorNanosAtStart;
  private Map<String, Object> allocatorOptions = Map.of();
  /** Sequences holding a buffer, in the order they got it (the breakdown and the checker walk them). */
  private final LinkedHashSet<Sequence> holding = new LinkedHashSet<>();
  private long reservations;
  private long refusals;
  private long fragmentationRefusals;
  private long copies;
  private long copiedBytes;
  private double copyNanos;
  private long forkCopies;
  private MemoryListener listener;
  private long activationHandle = -1;
  private long activationTraceId;
  private long activationBytes;
  /** The id of the last allocation asked for, for the listener. */
  private long lastTraceId;
  private long forkCopiedBytes;
  /** Hears refusals to running sequences and of activations (Note [Serving OOM] in {@link KvRefusals}); null for none. */
  private KvRefusals.Listener refusalListener;
  /** The last refusal {@link #take} met. */
  private AllocOutcome.OutOfMemory lastRefusal;

  /**
   * A manager over {@code allocator}, an empty contiguous model of a region of {@code regionBytes}.
   *
   * @param allocator the allocator model, nothing allocated yet
   * @param regionBytes the size of the region it manages
   * @param reservation the reservation policy
   * @param kvBytesPerToken the model's KV bytes per token
   * @param maxModelLen the longest sequence, prompt plus output
   * @param copyBytesPerSecond bytes a growth copy moves per second (read and written once each)
   */
  public ContiguousKvManager(Allocator allocator, long regionBytes, Reservation reservation, long kvBytesPerToken, int maxModelLen,
      double copyBytesPerSecond) {
    this(allocator, regionBytes, reservation, kvBytesPerToken, maxModelLen, copyCost(copyBytesPerSecond));
  }

  private static CopyCostModel copyCost(double copyBytesPerSecond) {
    if (!(copyBytesPerSecond > 0)) {
      throw new IllegalArgumentException("KV bytes per token and copy bandwidth must be positive, max_model_len at least 2");
    }
    // A contiguous manager copies within HBM only; the host link is never used.
    return new CopyBandwidths(copyBytesPerSecond, Double.POSITIVE_INFINITY);
  }

  /** A manager as above whose copies take the HBM copy times of {@code copyCost}. */
  public ContiguousKvManager(Allocator allocator, long regionBytes, Reservation reservation, long kvBytesPerToken, int maxModelLen,
      CopyCostModel copyCost) {
    if (kvBytesPerToken < 1 || maxModelLen < 2 || copyCost == null) {
      throw new IllegalArgumentException("KV bytes per token and copy bandwidth must be positive, max_model_len at least 2");
    }
    if (allocator.stats().liveAllocations() != 0) {
      throw new IllegalArgumentException(allocator.name() + " already holds allocations");
    }
    this.allocator = allocator;
    this.reservation = reservation;
    this.kvBytesPerToken = kvBytesPerToken;
    this.maxModelLen = maxModelLen;
    this.copyCost = copyCost;
    this.regionTokens = regionBytes / kvBytesPerToken;
    long largest = allocator.largestFreeBytes() / kvBytesPerToken;
    // Note [Room to grow]: a growing sequence holds its old buffer (up to its length, anywhere in
    // the region) while it takes the new one (up to its length too); the free memory on the larger
    // side of the old buffer holds the new one when the region holds three times the length.
    this.capacityTokens = reservation == Reservation.GROW ? largest / 3 : largest;
    this.allocatorNanosAtStart = allocator.stats().modelledNanos();
  }

  /**
   * Builds a manager over a fresh model of the registry's allocator {@code allocatorName}, which
   * must declare {@link Capability#CONTIGUOUS}, managing a KV region of {@code kvMemoryBytes}.
   *
   * @throws InputException when the allocator is unknown, not contiguous, or rejects its options
   */
  public static ContiguousKvManager create(String allocatorName, Map<String, String> options, long kvMemoryBytes, DeviceSpec device,
      ModelPreset model, Reservation reservation, int maxModelLen) {
    return create(allocatorName, options, kvMemoryBytes, device, model, reservation, maxModelLen, Calibration.NONE);
  }

  /**
   * Builds a manager as above whose allocator takes {@code calibration}'s latencies and whose
   * copies take its copy costs over {@code device}'s defaults.
   */
  public static ContiguousKvManager create(String allocatorName, Map<String, String> options, long kvMemoryBytes, DeviceSpec device,
      ModelPreset model, Reservation reservation, int maxModelLen, Calibration calibration) {
    AllocatorRegistry.Entry entry = AllocatorRegistry.get(allocatorName);
    if (!entry.capabilities().contains(Capability.CONTIGUOUS)) {
      throw new InputException("allocator " + allocatorName + " is " + entry.capabilityLabels()
          + ", not contiguous: a contiguous KV manager needs one extent per sequence");
    }
    Region region = new Region("kv", 0, kvMemoryBytes);
    AllocatorContext context = new AllocatorContext(allocatorName, region, device, model, options, calibration);
    Allocator a = AllocatorRegistry.create(context);
    ContiguousKvManager m = new ContiguousKvManager(a, kvMemoryBytes, reservation, model.kvBytesPerToken(), maxModelLen, calibration.cost().copyCost(device));
    m.allocatorOptions = new LinkedHashMap<>(context.effectiveOptions());
    return m;
  }

  /** Returns the allocator's options in force, defaults included (empty when built without the registry). */
  public Map<String, Object> allocatorOptions() {
    return allocatorOptions;
  }

  /**
   * Returns the bandwidth of a growth copy on {@code device}: the roofline's achieved share of peak
   * HBM bandwidth, halved because every byte is read and written.
   */
  public static double copyBytesPerSecond(DeviceSpec device) {
    return CopyBandwidths.of(device).hbmCopyBytesPerSecond();
  }

  /** Returns the allocator model under the manager. */
  public Allocator allocator() {
    return allocator;
  }

  /** Returns the reservation policy. */
  public Reservation reservation() {
    return reservation;
  }

  private static Buffer of(Sequence s) {
    return s.kvState(STATE);
  }

  /** Returns the tokens the policy reserves for {@code s} at admission, which needs {@code needed}. */
  int admissionTokens(Sequence s, int needed) {
    int tokens = switch (reservation) {
      case MAX -> maxModelLen;
      case POW2 -> (int) Math.min(maxModelLen, nextPowerOfTwo(s.finalTokens()));
      case ORACLE -> s.finalTokens();
      case GROW -> needed;
    };
    return Math.max(tokens, needed);
  }

  /** Returns the smallest power of two of at least {@code x} (1 for x ≤ 1). */
  static long nextPowerOfTwo(long x) {
    return x <= 1 ? 1 : Long.highestOneBit(x - 1) << 1;
  }

  @Override
  public void add(Sequence s) {
    s.setKvState(STATE, null);
  }

  @Override
  public int lookup(Sequence s) {
    return 0;
  }

  @Override
  public boolean allocate(Sequence s, int numNewTokens) {
    if (numNewTokens <= 0 || (long) s.numComputedTokens() + numNewTokens > s.numTokens()) {
      throw new IllegalArgumentException(numNewTokens + " new tokens for " + s);
    }
    int needed = s.numComputedTokens() + numNewTokens;
    Buffer b = of(s);
    if (b == null) {
      int tokens = admissionTokens(s, needed);
      SequenceGroup g = s.group;
      int count = g.forking() && s.index == 0 && s.outputTokens() == 0 ? g.width() : 1;
      long[] handles = new long[count];
      long[] traceIds = new long[count];
      for (int k = 0; k < count; k++) {
        AllocOutcome.Allocated got = take(tokens);
        if (got == null) {
          for (int j = 0; j < k; j++) {
            release(handles[j], traceIds[j]);
          }
          return false;
        }
        handles[k] = got.handle();
        traceIds[k] = lastTraceId;
      }
      for (int k = 0; k < count; k++) {
        Sequence owner = g.sequences[s.index + k];
        Buffer one = new Buffer();
        one.handle = handles[k];
        one.traceId = traceIds[k];
        one.reservedTokens = tokens;
        owner.setKvState(STATE, one);
        holding.add(owner);
        reservations++;
      }
      b = of(s);
    } else if (needed > b.reservedTokens) {
      if (reservation != Reservation.GROW) {
        throw new IllegalStateException(s + " outgrows its " + reservation.label() + " reservation of " + b.reservedTokens + " tokens");
      }
      if (!grow(b, needed, s.numComputedTokens())) {
        return false;
      }
    }
    s.advanceComputedTo(needed);
    return true;
  }

  /**
   * Moves buffer {@code b} to a new one of twice its tokens (at least {@code needed}, at most
   * {@code max_model_len}), copying {@code computed} tokens; false, changing nothing, when refused.
   */
  private boolean grow(Buffer b, int needed, int computed) {
    int tokens = (int) Math.max(needed, Math.min(maxModelLen, 2L * b.reservedTokens));
    AllocOutcome.Allocated got = take(tokens);
    if (got == null) {
      if (refusalListener != null) {
        refusalListener.refused(lastRefusal.requestedBytes(), lastRefusal.reason());
      }
      return false;
    }
    long bytes = (long) computed * kvBytesPerToken;
    copies++;
    copiedBytes += bytes;
    copyNanos += copyCost.hbmCopyNanos(bytes);
    release(b.handle, b.traceId);
    b.handle = got.handle();
    b.traceId = lastTraceId;
    b.reservedTokens = tokens;
    return true;
  }

  /** Frees an allocation and tells the listener. */
  private void release(long handle, long traceId) {
    allocator.free(handle);
    if (listener != null) {
      listener.freed(traceId);
    }
  }

  /** Each buffer asked for (granted or refused) is an unsplittable allocation; ids count from 1. */
  @Override
  public void listen(MemoryListener listener) {
    this.listener = listener;
  }

  /**
   * A fork: copies {@code source}'s computed tokens into {@code target}'s own buffer, reserved
   * with its group; a growing buffer too small for them grows first (the old contents are not
   * copied: they are overwritten).
   *
   * @throws IllegalStateException when the target holds no buffer, or its buffer cannot hold the
   *     tokens (a fixed reservation, or a growth the allocator refuses: out of memory)
   */
  @Override
  public void fork(Sequence source, Sequence target) {
    Buffer b = of(target);
    if (b == null) {
      throw new IllegalStateException(target + " holds no buffer to fork " + source + " into");
    }
    int needed = source.numComputedTokens();
    if (needed > b.reservedTokens && (reservation != Reservation.GROW || !grow(b, needed, 0))) {
      throw new IllegalStateException("out of KV memory: " + target + " cannot hold the " + needed + " tokens of " + source);
    }
    long bytes = (long) needed * kvBytesPerToken;
    forkCopies++;
    forkCopiedBytes += bytes;
    copyNanos += copyCost.hbmCopyNanos(bytes);
  }

  /** Returns {@code fork_copies} and {@code fork_copied_bytes}: prompts and beams copied between a group's buffers. */
  @Override
  public Map<String, Long> groupCounters() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("fork_copies", forkCopies);
    m.put("fork_copied_bytes", forkCopiedBytes);
    return m;
  }

  /** Asks the allocator for a buffer of {@code tokens}; null, counted, when it refuses. */
  private AllocOutcome.Allocated take(int tokens) {
    AllocOutcome out = allocateTraced(Math.multiplyExact(tokens, kvBytesPerToken), Tag.KV);
    if (out instanceof AllocOutcome.Allocated a) {
      return a;
    }
    refusals++;
    lastRefusal = (AllocOutcome.OutOfMemory) out;
    if (((AllocOutcome.OutOfMemory) out).reason() == OomReason.FRAGMENTATION) {
      fragmentationRefusals++;
    }
    return null;
  }

  /** Asks the allocator for {@code bytes} tagged {@code tag} and tells the listener, under a fresh id. */
  private AllocOutcome allocateTraced(long bytes, Tag tag) {
    lastTraceId++;
    if (listener != null) {
      listener.allocated(lastTraceId, bytes, tag, false);
    }
    return allocator.allocate(new AllocRequest(bytes, tag, false, 0));
  }

  /**
   * The naive plan: the iteration's activations are one unsplittable allocation of the KV's
   * allocator, tagged {@code activation}; returns its handle (with its trace id kept), or -1 when
   * refused.
   */
  @Override
  public long allocateActivations(long bytes) {
    AllocOutcome out = allocateTraced(bytes, Tag.ACTIVATION);
    if (out instanceof AllocOutcome.Allocated a) {
      activationHandle = a.handle();
      activationTraceId = lastTraceId;
      activationBytes = bytes;
      return a.handle();
    }
    if (refusalListener != null) {
      AllocOutcome.OutOfMemory o = (AllocOutcome.OutOfMemory) out;
      refusalListener.refused(o.requestedBytes(), o.reason());
    }
    return -1;
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
  public void freeActivations(long handle) {
    if (handle != activationHandle) {
      throw new IllegalStateException("activations " + handle + " are not the live ones");
    }
    release(handle, activationTraceId);
    activationHandle = -1;
    activationBytes = 0;
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
    Buffer b = of(s);
    if (b != null) {
      release(b.handle, b.traceId);
      s.setKvState(STATE, null);
      holding.remove(s);
    }
  }

  @Override
  public long capacityTokens() {
    return capacityTokens;
  }

  @Override
  public long modelledNanos() {
    return allocator.stats().modelledNanos() - allocatorNanosAtStart + Math.round(copyNanos);
  }

  @Override
  public void breakdown(long[] out) {
    long tokens = 0;
    long future = 0;
    long waste = 0;
    for (Sequence s : holding) {
      int reserved = of(s).reservedTokens;
      long usable = Math.min(reserved, s.finalTokens());
      tokens += s.numComputedTokens();
      future += usable - s.numComputedTokens();
      waste += reserved - usable;
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

  /**
   * Returns {@code reservations} (buffers taken at admission), {@code reservations_refused} and
   * {@code fragmentation_refusals} (refused although the free bytes sufficed; admissions and
   * growths both count, every time they are tried), {@code copies}, {@code copied_bytes} and {@code
   * copy_nanos} (growths).
   */
  @Override
  public Map<String, Long> counters() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("reservations", reservations);
    m.put("reservations_refused", refusals);
    m.put("fragmentation_refusals", fragmentationRefusals);
    m.put("copies", copies);
    m.put("copied_bytes", copiedBytes);
    m.put("copy_nanos", Math.round(copyNanos));
    return m;
  }

  @Override
  public void checkInvariants() {
    allocator.checkInvariants();
    long requested = 0;
    for (Sequence s : holding) {
      Buffer b = of(s);
      if (b == null || s.status() == Sequence.Status.FINISHED) {
        throw new IllegalStateException(s + " is listed as holding a buffer");
      }
      if (s.numComputedTokens() > b.reservedTokens) {
        throw new IllegalStateException(s + " computed more than its " + b.reservedTokens + " reserved tokens");
      }
      requested += b.reservedTokens * kvBytesPerToken;
    }
    int activations = activationHandle >= 0 ? 1 : 0;
    requested += activationBytes;
    if (allocator.stats().liveAllocations() != holding.size() + activations || allocator.stats().requestedBytes() != requested) {
      throw new IllegalStateException("the allocator holds " + allocator.stats().liveAllocations() + " allocations of "
          + allocator.stats().requestedBytes() + " B requested; the sequences hold " + holding.size() + " buffers of " + requested + " B");
    }
  }
}
