package kvsim.serving;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.paged.BlockHasher;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.alloc.paged.OpLog;
import kvsim.alloc.paged.PagedRequest;
import kvsim.alloc.paged.PrefixCacheStats;
import kvsim.alloc.paged.PromptHasher;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.devicemodel.CopyBandwidths;
import kvsim.devicemodel.CopyCostModel;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.Request;

/**
 * KV memory as vLLM keeps it: a {@link KvBlockManager} (v1: free queue, null block, prefix caching
 * by chained block hashes) whose blocks of {@code B} tokens each sequence takes as it grows. The
 * block rules are vLLM's as {@link KvBlockManager} cites them: v1 at commit ec5ef0a, v0 at commit
 * 1fb9c1b ({@code vllm/core/block_manager_v2.py} {@code BlockSpaceManagerV2} and {@code
 * vllm/core/scheduler.py} {@code Scheduler}).
 *
 * <ul>
 *   <li>Prompts: a request's prompt tokens are unique to it (its id in the first two tokens), so
 *       requests share cached blocks only through the trace's prefix hashes; those are mapped to
 *       blocks of B tokens as the traces' statistics advise: hash {@code h} of {@code H} tokens
 *       becomes the ids {@code h × (H/B) + j}, j &lt; H/B ({@code H} must be a multiple of B).
 *   <li>Output tokens: the engine's ids, except that a request's first output token carries its
 *       id, so two requests never share output blocks by accident.
 *   <li>Latency: per {@code allocate_slots} call the model's allocation base plus its per-step cost
 *       per new block; per free or preemption its free base plus per-step cost per block held.
 *   <li>Breakdown: the null block (v1) and every free block (cached or not) are external waste; a used
 *       block's slots hold computed tokens, except the unfilled tail of each running sequence's
 *       table, which is reserved up to the sequence's final length and internal waste beyond it (a
 *       last block that forked sequences still share is counted once).
 *   <li>Sequence groups (vLLM v0 only: {@code fork}, copy-on-write, the scheduler's swap-out and
 *       swap-in): {@link #fork} gives a sequence a copy of
 *       another's block table, every block one more reference; the first write into a shared
 *       partial block copies it (copy-on-write, in the block manager), each copy one block read and
 *       written over HBM at the copy bandwidth, on the iteration's critical path. A group is
 *       swapped out and in whole ({@link #swapOut}, {@link #swapIn}), its distinct blocks moved
 *       once over the host link, the transfer on the critical path of the iteration that orders it
 *       (v0's worker swaps before the forward pass, on the same stream).
 * </ul>
 *
 * <p>With given tokens ({@link #withGivenTokens}), for {@link ScriptedServing}, the caller names
 * each sequence and supplies its prompt's token ids ({@link #add(Sequence, String, int[])}) and
 * every sampled token id, which are used as they are: prefix hits then follow the real tokens.
 */
public final class PagedKvManager implements KvManager, KvManager.Forking, KvManager.Watermarked, KvManager.Swapping, KvManager.Observable,
    KvManager.GroupCounting, KvManager.FullSequenceFit, KvManager.PreparesPrompts, KvManager.QuietDecodes, KvRefusals {
  /** vLLM v1's block manager as a system part: prefix caching on, FIFO free queue, the null block; reads {@code block-size}. */
  public static final KvManagerFactory V1_FACTORY = new KvManagerFactory() {
    @Override
    public String name() {
      return "paged";
    }

    @Override
    public Set<String> reads() {
      return Set.of("block-size");
    }

    @Override
    public KvManager create(String system, ServingSystems.Build b, SchedulerConfig config, Map<String, Object> parts) {
      long numBlocks = checkedBlocks(b);
      // A serving run prints no block hash, so it hashes with the faster function (BlockHasher's Note [Block hash]).
      BlockManagerConfig c = new BlockManagerConfig((int) numBlocks, b.blockTokens(), true, BlockManagerConfig.Mode.V1, 0,
          BlockManagerConfig.FreeOrder.FIFO, 0, config.maxModelLen(), b.kvBytesPerToken(), BlockHasher.Algorithm.MURMUR3);
      PagedKvManager kv = new PagedKvManager(listless(AllocatorRegistry.blockManager(c)), b.hashBlockTokens(),
          AllocatorRegistry.blockManagerLatency(b.calibration()), b.calibration().cost().copyCost(b.device()));
      parts.put("block_tokens", b.blockTokens());
      parts.put("num_gpu_blocks", numBlocks);
      parts.put("prefix_caching", true);
      return kv;
    }
  };

  /**
   * vLLM v0's block manager as a system part: free deque with LIFO reuse, no null block, prefix
   * caching off, a host pool of {@code swap_space} for swapped groups; reads {@code block-size} and
   * {@code swap-space}.
   */
  public static final KvManagerFactory V0_FACTORY = new KvManagerFactory() {
    @Override
    public String name() {
      return "paged";
    }

    @Override
    public Set<String> reads() {
      return Set.of("block-size", "swap-space");
    }

    @Override
    public KvManager create(String system, ServingSystems.Build b, SchedulerConfig config, Map<String, Object> parts) {
      long numBlocks = checkedBlocks(b);
      long hostBlocks = b.swapSpaceBytes() / ((long) b.blockTokens() * b.kvBytesPerToken());
      if (hostBlocks > Integer.MAX_VALUE / 2 - numBlocks) {
        throw new InputException("--swap-space: " + Bytes.format(b.swapSpaceBytes()) + " makes too many host blocks");
      }
      BlockManagerConfig c = new BlockManagerConfig((int) numBlocks, b.blockTokens(), false, BlockManagerConfig.Mode.V0,
          config.watermark(), BlockManagerConfig.FreeOrder.LIFO, (int) hostBlocks, config.maxModelLen(), b.kvBytesPerToken());
      PagedKvManager kv = new PagedKvManager(listless(AllocatorRegistry.blockManager(c)), b.hashBlockTokens(),
          AllocatorRegistry.blockManagerLatency(b.calibration()), b.calibration().cost().copyCost(b.device()));
      parts.put("block_tokens", b.blockTokens());
      parts.put("num_gpu_blocks", numBlocks);
      parts.put("prefix_caching", false);
      parts.put("swap_space_bytes", b.swapSpaceBytes());
      parts.put("num_cpu_blocks", hostBlocks);
      return kv;
    }
  };

  /**
   * A block manager of a serving system's own, which lists no blocks per operation: a serving run
   * reads only the log's counts and verdicts (Note [Block lists on demand] in {@code OpLog}). A
   * manager shared with a block script keeps its lists.
   */
  private static KvBlockManager listless(KvBlockManager blocks) {
    blocks.recordBlockLists(false);
    return blocks;
  }

  private static long checkedBlocks(ServingSystems.Build b) {
    long numBlocks = ServingSystems.numBlocks(b.kvMemoryBytes(), b.kvBytesPerToken(), b.blockTokens());
    if (numBlocks < 2 || numBlocks > Integer.MAX_VALUE / 2) {
      throw new InputException("KV memory of " + b.kvMemoryBytes() + " B makes " + numBlocks + " blocks of " + b.blockTokens() + " tokens; need 2 to " + Integer.MAX_VALUE / 2);
    }
    return numBlocks;
  }

  /** Where a sequence's block-manager request is kept. */
  private static final Sequence.KvStateKey<PagedRequest> STATE = new Sequence.KvStateKey<>("paged");
  private final KvBlockManager blocks;
  private final int blockTokens;
  private final int hashBlockTokens;
  private final LatencyModel latency;
  private final int usableBlocks;
  private final boolean givenTokens;
  /** Sequences holding blocks, in the order they first got them (the breakdown walks them). */
  private final HoldingList holding = new HoldingList();
  /** The one token {@link #append} hands the block manager, which reads it and keeps nothing of the array. */
  private final int[] oneToken = new int[1];
  /** The ids {@link #catchUp} appends. */
  private int[] catchUpTokens = new int[16];
  private final CopyCostModel copyCost;
  private final HashSet<Integer> sharedTails = new HashSet<>();
  private long modelledNanos;
  private long forks;
  private long cowCopies;
  private double copyNanos;
  private long swapOuts;
  private long swapIns;
  private long swappedOutBytes;
  private long swappedInBytes;
  private double swapNanos;
  private long heldBlockIterations;
  private long unsharedBlockIterations;
  /** Hears refusals to running sequences (Note [Serving OOM] in {@link KvRefusals}); null for none. */
  private KvRefusals.Listener refusalListener;

  /**
   * A manager over {@code blocks}; {@code hashBlockTokens} is the request source's tokens per
   * prefix hash (0 for none).
   */
  public PagedKvManager(KvBlockManager blocks, int hashBlockTokens, LatencyModel latency) {
    this(blocks, hashBlockTokens, latency, false, new CopyBandwidths(Double.POSITIVE_INFINITY, Double.POSITIVE_INFINITY));
  }

  /**
   * A manager over {@code blocks} whose copy-on-write copies move {@code copyBytesPerSecond} (each
   * byte read and written once) and whose swaps move {@code hostLinkBytesPerSecond} over the host
   * link.
   */
  public PagedKvManager(KvBlockManager blocks, int hashBlockTokens, LatencyModel latency, double copyBytesPerSecond, double hostLinkBytesPerSecond) {
    this(blocks, hashBlockTokens, latency, new CopyBandwidths(copyBytesPerSecond, hostLinkBytesPerSecond));
  }

  /** A manager over {@code blocks} whose copy-on-write copies and swaps take the times of {@code copies}. */
  public PagedKvManager(KvBlockManager blocks, int hashBlockTokens, LatencyModel latency, CopyCostModel copies) {
    this(blocks, hashBlockTokens, latency, false, copies);
  }

  private PagedKvManager(KvBlockManager blocks, int hashBlockTokens, LatencyModel latency, boolean givenTokens, CopyCostModel copies) {
    this.copyCost = java.util.Objects.requireNonNull(copies, "copies");
    this.givenTokens = givenTokens;
    this.blocks = blocks;
    this.blockTokens = blocks.config().blockSize();
    this.hashBlockTokens = hashBlockTokens;
    this.latency = latency;
    // v1 keeps block 0 as the null block; v0 uses every block.
    this.usableBlocks = blocks.config().numBlocks() - (blocks.config().mode() == BlockManagerConfig.Mode.V1 ? 1 : 0);
    if (hashBlockTokens > 0 && hashBlockTokens % blockTokens != 0) {
      throw new IllegalArgumentException("the trace's " + hashBlockTokens + "-token prefix hashes do not split into blocks of " + blockTokens + " tokens");
    }
  }

  /**
   * A manager over {@code blocks} whose sequences carry the caller's token ids: added with {@link
   * #add(Sequence, String, int[])}, appended as given. No latency is modelled.
   */
  static PagedKvManager withGivenTokens(KvBlockManager blocks) {
    return new PagedKvManager(blocks, 0, new LatencyModel(0, 0, 0, 0, 0, 0), true, new CopyBandwidths(Double.POSITIVE_INFINITY, Double.POSITIVE_INFINITY));
  }

  /** Registers a sequence under {@code name} with these prompt token ids (given-tokens mode only). */
  void add(Sequence s, String name, int[] prompt) {
    if (!givenTokens) {
      throw new IllegalStateException("named sequences with given tokens need withGivenTokens");
    }
    s.setKvState(STATE, blocks.addRequest(name, prompt, null, null, null));
  }

  /** Returns the block manager's request of a sequence. */
  static PagedRequest requestOf(Sequence s) {
    return s.kvState(STATE);
  }

  /** Returns the block manager. */
  public KvBlockManager blockManager() {
    return blocks;
  }

  @Override
  public void add(Sequence s) {
    if (givenTokens) {
      throw new IllegalStateException("a manager with given tokens needs each sequence's name and prompt");
    }
    int[] tokens = promptBuffer(s.request, s.finalTokens());
    long id = s.request.id();
    // A fanned-out group's other sequences are requests of their own: "id.index".
    s.setKvState(STATE, blocks.addRequest(s.index == 0 ? Long.toString(id) : id + "." + s.index, tokens, s.request.promptTokens(), blockHashIds(s.request)));
  }

  /**
   * The token buffer of a sequence of request {@code r} that ends at {@code finalTokens}: the
   * prompt's ids (unique to the request, its id in the first two), with room for the whole final
   * sequence (Note [Token storage sized once] in PagedRequest), which the block manager never lets
   * grow past max_model_len.
   */
  private int[] promptBuffer(Request r, int finalTokens) {
    int prompt = r.promptTokens();
    int[] tokens = new int[bufferLength(r, finalTokens)];
    long id = r.id();
    tokens[0] = (int) (id >>> 32);
    if (prompt > 1) {
      tokens[1] = (int) id;
    }
    for (int i = 2; i < prompt; i++) {
      tokens[i] = i;
    }
    return tokens;
  }

  private int bufferLength(Request r, int finalTokens) {
    return Math.max(r.promptTokens(), Math.min(finalTokens, blocks.config().maxModelLen()));
  }

  /** The hash ids of {@code r}'s full prompt blocks, from the trace's prefix hashes; null without them. */
  private long[] blockHashIds(Request r) {
    long[] given = r.hashIds();
    if (given == null || hashBlockTokens <= 0) {
      return null;
    }
    int per = hashBlockTokens / blockTokens;
    int full = r.promptTokens() / blockTokens;
    long[] hashIds = new long[full];
    for (int b = 0; b < full; b++) {
      hashIds[b] = given[b / per] * per + b % per;
    }
    return hashIds;
  }

  /**
   * A preparer that hashes the prompts' full blocks ahead (Note [Prompts hashed ahead] in {@code
   * PromptHasher}); none where the manager does not cache prefixes, or takes given tokens.
   */
  @Override
  public KvManager.PromptPreparer preparer() {
    if (givenTokens || !blocks.config().enableCaching()) {
      return null;
    }
    PromptHasher hasher = blocks.promptHasher();
    // Note [Output hashed ahead] in PromptHasher: the lead sequence is expected to append every
    // output token but its last (never appended), with the ids this manager appends when the engine
    // follows its rule (ServingEngine.FIRST_OUTPUT_TOKEN; the first carries the request id); a token
    // that differs drops the hashes ahead, so the rule is a guess, never an assumption
    return (r, maxOutputTokens) -> {
      int prompt = r.promptTokens();
      int[] buffer = promptBuffer(r, prompt + maxOutputTokens);
      int expected = Math.max(0, Math.min(buffer.length - prompt, maxOutputTokens - 1));
      return hasher.prepare(buffer, prompt, blockHashIds(r), expected, firstOutputToken(r, 0), ServingEngine.FIRST_OUTPUT_TOKEN);
    };
  }

  @Override
  public void add(Sequence s, Object prepared) {
    if (prepared == null) {
      add(s);
      return;
    }
    PromptHasher.Prepared p = (PromptHasher.Prepared) prepared;
    if (givenTokens || s.index != 0 || p.buffer().length != bufferLength(s.request, s.finalTokens())) {
      throw new IllegalArgumentException(s + ": a prompt prepared for another sequence");
    }
    s.setKvState(STATE, blocks.addRequest(Long.toString(s.request.id()), p));
  }

  private static PagedRequest of(Sequence s) {
    return s.kvState(STATE);
  }

  @Override
  public int lookup(Sequence s) {
    return blocks.lookup(of(s)) * blockTokens;
  }

  /**
   * vLLM v0's admission of a waiting sequence ({@code BlockSpaceManagerV2.can_allocate}, then v1's
   * waiting path of {@code Scheduler.schedule}): the watermark test
   * on the blocks of all its tokens, hits ignored; when it says OK, lookup and slots for every
   * token not hit. Returns the watermark's verdict; on OK the sequence holds its blocks and its
   * computed tokens are its tokens. v0 managers only.
   */
  @Override
  public OpLog.Admission admitWhole(Sequence s) {
    PagedRequest r = of(s);
    int before = r.numBlocks();
    boolean ok = blocks.admit(r);
    modelledNanos += latency.allocBaseNanos();
    OpLog.Admission verdict = blocks.log().admission();
    if (ok) {
      modelledNanos += latency.allocPerStepNanos() * (r.numBlocks() - before);
      s.advanceComputedTo(r.numComputedTokens());
      hold(s);
      return OpLog.Admission.OK;
    }
    if (verdict == null || verdict == OpLog.Admission.OK) {
      throw new IllegalStateException(s + ": the watermark admitted it but its blocks could not be allocated");
    }
    return verdict;
  }

  @Override
  public boolean allocate(Sequence s, int numNewTokens) {
    PagedRequest r = of(s);
    int before = r.numBlocks();
    boolean ok = blocks.allocateSlots(r, numNewTokens, 0);
    modelledNanos += latency.allocBaseNanos();
    if (ok) {
      modelledNanos += latency.allocPerStepNanos() * (r.numBlocks() - before);
      int copies = blocks.log().numCopies();
      if (copies > 0) {
        cowCopies += copies;
        copyNanos += copyCost.hbmCopyNanos((double) copies * blocks.config().blockBytes());
      }
      s.advanceComputedTo(r.numComputedTokens());
      hold(s);
    } else if (refusalListener != null && s.numComputedTokens() > 0) {
      refusalListener.refused(blocks.blocksToAppend(r, numNewTokens) * blocks.config().blockBytes(), kvsim.alloc.OomReason.NO_MEMORY);
    }
    return ok;
  }

  @Override
  public void listenRefusals(KvRefusals.Listener listener) {
    this.refusalListener = listener;
  }

  @Override
  public List<kvsim.alloc.SegmentLayout> layout() {
    return KvRefusals.blockPoolLayout(blocks);
  }

  /**
   * The full-prompt admission gate (Note [Full-prompt admission gate] in {@link VllmV1Scheduler}):
   * the blocks the waiting sequence's whole current sequence takes beyond the hits of its last
   * lookup, counted as {@code can_fit_full_sequence} counts them, against the free blocks.
   */
  @Override
  public boolean canFitFullSequence(Sequence s) {
    return blocks.blocksForFullSequence(of(s)) <= blocks.numFreeBlocks();
  }

  @Override
  public void append(Sequence s, int token) {
    oneToken[0] = outputTokenId(s, s.outputTokens() - 1, token);
    blocks.appendTokens(of(s), oneToken);
  }

  /**
   * How many decode steps in a row {@code s} can take that take and fill no block (Note [Quiet
   * decode steps] on {@code BlockManager}); 0 with given tokens, which the caller supplies one by
   * one.
   */
  @Override
  public int quietDecodeSteps(Sequence s) {
    return givenTokens ? 0 : blocks.quietDecodeSteps(of(s));
  }

  /**
   * Each quiet step is an allocation within the table: the model's allocation base, no block; its
   * sequence's reserved slots shrink by one, its waste stays (Note [Breakdown sums]).
   */
  @Override
  public void tookQuietSteps(int steps) {
    modelledNanos += latency.allocBaseNanos() * steps;
    holding.tookQuietSteps(steps);
  }

  @Override
  public void catchUp(Sequence s, StepOutput tokens) {
    PagedRequest r = of(s);
    int steps = s.numComputedTokens() - r.numComputedTokens();
    if (steps == 0) {
      return;
    }
    int count = s.numTokens() - r.numTokens();
    if (catchUpTokens.length < count) {
      catchUpTokens = new int[Math.max(count, 2 * catchUpTokens.length)];
    }
    int firstOutput = r.numTokens() - s.request.promptTokens();
    for (int k = 0; k < count; k++) {
      catchUpTokens[k] = outputTokenId(s, firstOutput + k, tokens.token(s, firstOutput + k));
    }
    blocks.catchUpQuietly(r, s.numComputedTokens(), catchUpTokens, count);
    holding.caughtUp(s, steps);
  }

  /** The id this manager appends for output token {@code k} of {@code s}, which the engine gives as {@code token}. */
  private int outputTokenId(Sequence s, int k, int token) {
    return givenTokens ? token : k == 0 ? firstOutputToken(s.request, s.index) : token;
  }

  /**
   * The token id of sequence {@code index}'s first output token of request {@code r}: it carries the
   * request id, and for a group's other sequences their index too, so that no two sequences share
   * output blocks by accident.
   */
  private static int firstOutputToken(Request r, int index) {
    int lead = Integer.MIN_VALUE + (int) r.id();
    return index == 0 ? lead : lead ^ (index << 24) ^ 0x00800000;
  }

  /** Each block taken is an allocation of the block's bytes (id: the block id), each block released its free. */
  @Override
  public void listen(MemoryListener listener) {
    long blockBytes = blocks.config().blockBytes();
    blocks.listen(new kvsim.alloc.paged.BlockListener() {
      @Override
      public void taken(int block) {
        listener.allocated(block, blockBytes, kvsim.core.Tag.KV, true);
      }

      @Override
      public void released(int block) {
        listener.freed(block);
      }
    });
  }

  /**
   * A fork (v0's {@code fork}): {@code target}, which holds nothing or is dropped (its blocks freed as a
   * finish frees them), gets a copy of {@code source}'s block table, one more reference on each
   * block, under a block-manager request of its own. v0 managers only.
   */
  @Override
  public void fork(Sequence source, Sequence target) {
    if (target.kvState(STATE) != null && holding.contains(target)) {
      finish(target);
    }
    target.setKvState(STATE, blocks.fork(of(source), source.request.id() + "/" + (++forks)));
    hold(target);
  }

  /**
   * Swaps a running group's sequences out to the host pool (v0's swap-out, {@code can_swap_out}), their distinct blocks once;
   * returns false, changing nothing, when the host pool lacks blocks.
   */
  @Override
  public boolean swapOut(List<Sequence> sequences) {
    List<PagedRequest> group = requestsOf(sequences);
    if (!blocks.swapOut(group)) {
      return false;
    }
    swapOuts++;
    swappedOutBytes += blocks.log().bytesMoved();
    swapNanos += copyCost.hostLinkNanos(blocks.log().bytesMoved());
    modelledNanos += latency.freeBaseNanos();
    for (Sequence s : sequences) {
      holding.remove(s);
    }
    return true;
  }

  /** Swaps a swapped group's sequences back in (v0's swap-in, {@code can_swap_in}); returns the watermark's verdict (OK: done). */
  @Override
  public OpLog.Admission swapIn(List<Sequence> sequences) {
    if (!blocks.swapIn(requestsOf(sequences))) {
      return blocks.log().admission();
    }
    swapIns++;
    swappedInBytes += blocks.log().bytesMoved();
    swapNanos += copyCost.hostLinkNanos(blocks.log().bytesMoved());
    modelledNanos += latency.allocBaseNanos();
    for (Sequence s : sequences) {
      hold(s);
    }
    return OpLog.Admission.OK;
  }

  /**
   * Returns whether the group's sequences, each at its final length and unshared, plus one
   * copy-on-write block each, fit the usable blocks less v0's watermark: then the group alone can
   * always decode and always be swapped back in.
   */
  @Override
  public boolean canEverHold(SequenceGroup g) {
    long perSequence = (g.lead().finalTokens() + blockTokens - 1) / blockTokens + 1;
    return g.width() * perSequence <= usableBlocks - blocks.config().watermarkBlocks();
  }

  /**
   * Returns whether the free blocks suffice for one decode step of each of {@code sequences} that
   * has a token to compute, counted worst case as vLLM V2's {@code can_append_slots} does (new
   * blocks plus a copy for each shared block written).
   */
  @Override
  public boolean canAppend(List<Sequence> sequences) {
    long need = 0;
    for (Sequence s : sequences) {
      int n = s.numTokens() - s.numComputedTokens();
      if (n > 0) {
        need += blocks.blocksToAppend(of(s), n);
      }
    }
    boolean fits = need <= blocks.numFreeBlocks();
    if (!fits && refusalListener != null) {
      refusalListener.refused(need * blocks.config().blockBytes(), kvsim.alloc.OomReason.NO_MEMORY);
    }
    return fits;
  }

  private static List<PagedRequest> requestsOf(List<Sequence> sequences) {
    List<PagedRequest> out = new ArrayList<>(sequences.size());
    for (Sequence s : sequences) {
      out.add(of(s));
    }
    return out;
  }

  @Override
  public void preempt(Sequence s) {
    PagedRequest r = of(s);
    modelledNanos += latency.freeBaseNanos() + latency.freePerStepNanos() * r.numBlocks();
    blocks.preempt(r);
    holding.remove(s);
  }

  @Override
  public void finish(Sequence s) {
    PagedRequest r = of(s);
    modelledNanos += latency.freeBaseNanos() + latency.freePerStepNanos() * r.numBlocks();
    blocks.free(r);
    holding.remove(s);
  }

  @Override
  public long capacityTokens() {
    return (long) usableBlocks * blockTokens;
  }

  @Override
  public long modelledNanos() {
    return modelledNanos + Math.round(copyNanos) + Math.round(swapNanos);
  }

  /**
   * {@code s} holds blocks after an allocation, admission, fork or swap-in: it joins the holders if
   * new, and its share of the breakdown is counted again (Note [Breakdown sums]).
   */
  private void hold(Sequence s) {
    holding.add(s);
    PagedRequest r = of(s);
    long unfilled = unfilledTokens(r);
    long reserved = reservedTokens(s, r, unfilled);
    holding.setTokens(s, reserved, unfilled - reserved);
  }

  /** The slots of {@code r}'s blocks not yet holding a computed token. */
  private long unfilledTokens(PagedRequest r) {
    return (long) r.numBlocks() * blockTokens - r.numComputedTokens();
  }

  /** Of {@code unfilled}, the slots that {@code s}'s future tokens will fill; the rest are waste. */
  private static long reservedTokens(Sequence s, PagedRequest r, long unfilled) {
    return Math.min(unfilled, (long) s.finalTokens() - r.numComputedTokens());
  }

  // Note [Breakdown sums]: the breakdown is taken after every iteration, and walking every holder
  // for it touched three objects a sequence. A holder's future and wasted slots change only when
  // its blocks or computed tokens do, which happens only here, in hold (allocate, admitWhole,
  // fork, swapIn) and on leaving the holders (preempt, finish, swapOut); appending a token moves
  // neither. So hold counts them again and the holding list keeps their sums, in longs, exactly
  // the sums of the walk. Forked sequences share blocks and their tails are counted once, which a
  // sum cannot see: once the manager has forked, the breakdown walks the holders as before.
  // checkInvariants compares the sums with the walk.

  @Override
  public void breakdown(long[] out) {
    long total = (long) blocks.config().numBlocks() * blockTokens;
    long used = (long) (usableBlocks - blocks.numFreeBlocks()) * blockTokens;
    long future;
    long waste;
    if (forks == 0) {
      future = holding.futureTokens();
      waste = holding.wasteTokens();
    } else {
      future = 0;
      waste = 0;
      sharedTails.clear();
      for (Sequence s = holding.first(); s != null; s = HoldingList.next(s)) {
        PagedRequest r = of(s);
        if (!sharedTails.add(r.lastBlock())) {
          continue;
        }
        long unfilled = unfilledTokens(r);
        long reserved = reservedTokens(s, r, unfilled);
        future += reserved;
        waste += unfilled - reserved;
      }
    }
    out[0] = used - future - waste;
    out[1] = future;
    out[2] = waste;
    out[3] = (long) blocks.numFreeBlocks() * blockTokens;
    out[4] = total - used - out[3]; // vLLM v1's null block, never handed out
  }

  /**
   * Adds this iteration's block use to the sharing measure: the distinct blocks the sequences hold
   * and the blocks their tables list (what they would hold without sharing).
   */
  @Override
  public void sampleSharing() {
    heldBlockIterations += usableBlocks - blocks.numFreeBlocks();
    for (Sequence s = holding.first(); s != null; s = HoldingList.next(s)) {
      unsharedBlockIterations += of(s).numBlocks();
    }
  }

  /**
   * Returns {@code forks}, {@code cow_copies} (blocks copied on a first divergent write), {@code
   * swap_outs} and {@code swap_ins} (groups), {@code swapped_out_bytes} and {@code swapped_in_bytes},
   * {@code copy_nanos} and {@code swap_nanos} (their time on the critical path), {@code
   * held_block_iterations} and {@code unshared_block_iterations} (see {@link #sampleSharing}).
   */
  @Override
  public Map<String, Long> groupCounters() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("forks", forks);
    m.put("cow_copies", cowCopies);
    m.put("swap_outs", swapOuts);
    m.put("swap_ins", swapIns);
    m.put("swapped_out_bytes", swappedOutBytes);
    m.put("swapped_in_bytes", swappedInBytes);
    m.put("copy_nanos", Math.round(copyNanos));
    m.put("swap_nanos", Math.round(swapNanos));
    m.put("held_block_iterations", heldBlockIterations);
    m.put("unshared_block_iterations", unsharedBlockIterations);
    return m;
  }

  /**
   * Returns, when prefix caching is on, vLLM v1's {@code PrefixCacheStats}: {@code
   * prefix_cache_requests}, {@code prefix_cache_queries} and {@code prefix_cache_hits} (tokens of
   * lookups by requests never preempted; a request looked up again after a failed allocation counts
   * again, as in vLLM), and the same three for preempted requests; empty without caching.
   */
  @Override
  public Map<String, Long> counters() {
    if (!blocks.config().enableCaching()) {
      return Map.of();
    }
    PrefixCacheStats s = blocks.stats();
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("prefix_cache_requests", s.requests());
    m.put("prefix_cache_queries", s.queries());
    m.put("prefix_cache_hits", s.hits());
    m.put("prefix_cache_preempted_requests", s.preemptedRequests());
    m.put("prefix_cache_preempted_queries", s.preemptedQueries());
    m.put("prefix_cache_preempted_hits", s.preemptedHits());
    return m;
  }

  @Override
  public void checkInvariants() {
    blocks.checkInvariants();
    long future = 0;
    long waste = 0;
    for (Sequence s = holding.first(); s != null; s = HoldingList.next(s)) {
      if (of(s).numComputedTokens() != s.numComputedTokens()) {
        throw new IllegalStateException(s + ": the block manager counts " + of(s).numComputedTokens() + " computed tokens");
      }
      long unfilled = unfilledTokens(of(s));
      long reserved = reservedTokens(s, of(s), unfilled);
      future += reserved;
      waste += unfilled - reserved;
    }
    if (future != holding.futureTokens() || waste != holding.wasteTokens()) {
      throw new IllegalStateException("the holders' future and wasted tokens sum to " + future + " and " + waste + " but are counted as "
          + holding.futureTokens() + " and " + holding.wasteTokens() + " (Note [Breakdown sums])");
    }
  }
}
