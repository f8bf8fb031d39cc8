package kvsim.blocks;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ArrayBlockingQueue;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.BlockOpException;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.alloc.paged.OpLog;
import kvsim.alloc.paged.PagedRequest;
import kvsim.alloc.paged.PrefixCacheStats;
import kvsim.core.InputException;
import kvsim.registry.AllocatorRegistry;
import kvsim.serving.SchedulerConfig;
import kvsim.serving.ScriptedServing;

/**
 * Runs a {@code kvsim blocks} script: JSONL operations against one {@link KvBlockManager} (built
 * by the {@link AllocatorRegistry}), one JSON object out per operation, fields in a fixed order.
 *
 * <ul>
 *   <li>Lines starting with {@code #} and blank lines are skipped; every other line is one
 *       operation object; {@code i} counts operations from 0.
 *   <li>The first operation must be {@code config}; there is exactly one.
 *   <li>Any problem in the script (malformed JSON, an unknown op or field, a field of the wrong
 *       type, an unknown request, an operation the manager refuses) stops the run with an {@link
 *       InputException} naming the file, line and field.
 *   <li>Running out of blocks is not an error: the operation prints {@code "ok":false}.
 * </ul>
 *
 * <p>The operations and fields are listed in the README's {@code kvsim blocks} section.
 */
public final class BlockScriptRunner {
  /**
   * The output of {@code kvsim blocks -o}, recognised by its first line, the result of operation 0
   * (Note [Output rule] on {@code core.OutputFile}).
   */
  public static final kvsim.core.OutputFile.Kind OUTPUT_KIND =
      kvsim.core.OutputFile.Kind.startingWith("a blocks output", "{\"i\":0,\"op\":");

  /** Token ids are non-negative 32-bit integers. */
  private static final long MAX_TOKEN = Integer.MAX_VALUE;
  /** The longest prompt_range accepted. */
  private static final int MAX_RANGE = 1 << 24;
  /** The config fields of vLLM v1's scheduler, which submit and step run. */
  private static final String[] SCHEDULER_FIELDS = {
    "max_num_batched_tokens", "max_num_seqs", "enable_chunked_prefill", "long_prefill_token_threshold", "scheduler_reserve_full_isl",
    "async_scheduling"
  };

  private final String source;
  private final boolean check;
  private KvBlockManager manager;
  /** vLLM v1's scheduler over {@link #manager}, for submit and step (mode v1 only). */
  private ScriptedServing serving;
  private boolean showFreeQueue = true;
  private long opIndex;

  /**
   * Builds a runner; {@code source} names the script in error messages, {@code check} runs the
   * invariant checker after every operation.
   */
  public BlockScriptRunner(String source, boolean check) {
    this.source = source;
    this.check = check;
  }

  /**
   * Runs every line of {@code in}, writing each operation's output line to {@code out}, and
   * flushes it. Lines are read and parsed as bytes (Note [Script lines as bytes]), on a second
   * thread a little ahead of the operations (Note [Parsing ahead]).
   */
  public void run(InputStream in, OutputStream out) throws IOException {
    JsonSink sink = new JsonSink(out);
    try (Ahead ahead = new Ahead(in)) {
      while (true) {
        Batch batch = ahead.take();
        for (int k = 0; k < batch.size; k++) {
          Object item = batch.items[k];
          if (item instanceof ScriptLine line) {
            execute(line).writeTo(sink);
            sink.endLine();
          } else if (item != null) {
            throw rethrown(item);
          }
        }
        if (batch.last) {
          break;
        }
      }
    }
    sink.flush();
    if (manager == null) {
      throw InputException.at(source, 0, null, "the script has no operations (the first must be config)");
    }
  }

  // Note [Parsing ahead]: reading and parsing a script's lines was two fifths of a long script's
  // run (its prompts are thousands of numbers), and nothing in it depends on the block manager. A
  // second thread reads and parses the lines in order, in batches of 256, at most 8 batches ahead
  // of the operations, which run on the caller's thread in order as before: a batch holds for each
  // line its parsed operation, null for a blank line or comment, or the exception its parsing
  // threw (an InputException for a malformed line, an I/O error), which the caller throws when it
  // reaches that line, after every earlier operation ran, exactly where reading and parsing on one
  // thread throws it. Output lines are made and written by the caller alone, so the output is that
  // of one thread byte for byte. When the caller stops (an operation fails), the parser stops too
  // and is waited for.
  private static final int BATCH_LINES = 256;
  private static final int BATCHES_AHEAD = 8;

  /** Parsed lines, in order (Note [Parsing ahead]). */
  private static final class Batch {
    final Object[] items = new Object[BATCH_LINES];
    int size;
    /** No batch follows. */
    boolean last;
  }

  /** The thread that parses ahead, and the batches it handed over (Note [Parsing ahead]). */
  private final class Ahead implements AutoCloseable, Runnable {
    private final InputStream in;
    private final ArrayBlockingQueue<Batch> batches = new ArrayBlockingQueue<>(BATCHES_AHEAD);
    private final Thread thread;

    Ahead(InputStream in) {
      this.in = in;
      thread = new Thread(this, "kvsim-blocks-parser");
      thread.setDaemon(true);
      thread.start();
    }

    @Override
    public void run() {
      Batch batch = new Batch();
      try {
        ByteLines lines = new ByteLines(in);
        long lineNo = 0;
        while (true) {
          Object item;
          try {
            if (!lines.next()) {
              break;
            }
            lineNo++;
            item = parse(lines.buffer(), lines.start(), lines.end(), lineNo);
          } catch (IOException | RuntimeException | Error e) {
            item = e;
          }
          batch.items[batch.size++] = item;
          if (item instanceof Throwable) {
            break;
          }
          if (batch.size == BATCH_LINES) {
            batches.put(batch);
            batch = new Batch();
          }
        }
        batch.last = true;
        batches.put(batch);
      } catch (InterruptedException e) {
        // the caller stopped: nobody takes the rest
      }
    }

    Batch take() throws IOException {
      try {
        return batches.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("interrupted while reading the script");
      }
    }

    @Override
    public void close() {
      thread.interrupt();
      boolean interrupted = false;
      while (true) {
        try {
          thread.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Returns the exception a batch held, to be thrown as it is. */
  private static IOException rethrown(Object item) {
    if (item instanceof RuntimeException e) {
      throw e;
    }
    if (item instanceof Error e) {
      throw e;
    }
    return (IOException) item;
  }

  /** Returns the manager (after the config line), for tests. */
  public KvBlockManager manager() {
    return manager;
  }

  /** Runs one script line; returns its output line, or null for a comment or blank line. */
  public String execute(String text, long lineNo) {
    ScriptLine line = parseText(text, lineNo);
    return line == null ? null : execute(line).toJson();
  }

  /** Parses one line of text: null for a comment or blank line. */
  private ScriptLine parseText(String text, long lineNo) {
    String trimmed = text.strip();
    if (trimmed.isEmpty() || trimmed.startsWith("#")) {
      return null;
    }
    return ScriptLine.parse(source, lineNo, trimmed);
  }

  // Note [Script lines as bytes]: a script is almost all ASCII digits and punctuation. A line of
  // ASCII is stripped of white space, tested for a comment and parsed straight from the read
  // buffer (Note [Plain lines] in PlainLineParser): no character decoding, no String per line. A
  // line with any other byte is decoded as strict UTF-8 (a comment too: a script that is not UTF-8
  // text is refused, as when it was read as text) and takes the path of text, so every line is
  // stripped, skipped and parsed exactly as a line of text.
  /** Parses one line of bytes: null for a comment or blank line. */
  private ScriptLine parse(byte[] buf, int start, int end, long lineNo) {
    while (start < end && asciiWhitespace(buf[start])) {
      start++;
    }
    while (end > start && asciiWhitespace(buf[end - 1])) {
      end--;
    }
    if (start == end) {
      return null;
    }
    for (int k = start; k < end; k++) {
      if (buf[k] < 0) { // a byte of 0x80 or more: not ASCII
        try {
          return parseText(StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(buf, start, end - start)).toString(), lineNo);
        } catch (CharacterCodingException e) {
          throw InputException.at(source, lineNo, null, "not UTF-8 text");
        }
      }
    }
    return buf[start] == '#' ? null : ScriptLine.parse(source, lineNo, buf, start, end - start);
  }

  /** The ASCII characters {@link Character#isWhitespace} accepts, which {@link String#strip} removes. */
  private static boolean asciiWhitespace(byte b) {
    return b == ' ' || (b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x1F);
  }

  private JsonLine execute(ScriptLine line) {
    JsonLine out = new JsonLine();
    out.put("i", opIndex);
    out.put("op", line.op());
    if (manager == null && !line.op().equals("config")) {
      throw line.error("op", "the first operation must be config, got " + line.op());
    }
    try {
      dispatch(line, out);
    } catch (BlockOpException e) {
      throw line.error(e.field(), e.getMessage());
    }
    if (check) {
      manager.checkInvariants();
      if (serving != null) {
        serving.checkInvariants();
      }
    }
    opIndex++;
    return out;
  }

  private void dispatch(ScriptLine line, JsonLine out) {
    switch (line.op()) {
      case "config" -> config(line, out);
      case "add" -> add(line, out);
      case "lookup" -> lookup(line, out);
      case "allocate" -> allocate(line, out);
      case "admit" -> admit(line, out);
      case "append" -> append(line, out);
      case "decode" -> decode(line, out);
      case "free" -> free(line, out);
      case "preempt" -> preempt(line, out);
      case "fork" -> fork(line, out);
      case "swap_out" -> swapOut(line, out);
      case "swap_in" -> swapIn(line, out);
      case "reset_prefix_cache" -> reset(line, out);
      case "state" -> state(line, out);
      case "submit" -> submit(line, out);
      case "step" -> step(line, out);
      default -> throw line.error(
          "op",
          "unknown operation '"
              + line.op()
              + "' (known: config, add, lookup, allocate, admit, append, decode, free, preempt, fork, swap_out,"
              + " swap_in, reset_prefix_cache, state, submit, step)");
    }
  }

  // ---------------------------------------------------------------------------------------------

  private void config(ScriptLine line, JsonLine out) {
    if (manager != null) {
      throw line.error("op", "config may appear only once, as the first operation");
    }
    line.allowOnly(
        "num_blocks",
        "block_size",
        "enable_caching",
        "mode",
        "watermark",
        "free_order",
        "num_host_blocks",
        "max_model_len",
        "bytes_per_token",
        "show_free_queue",
        "max_num_batched_tokens",
        "max_num_seqs",
        "enable_chunked_prefill",
        "long_prefill_token_threshold",
        "scheduler_reserve_full_isl",
        "async_scheduling");
    String modeText = line.has("mode") ? line.string("mode") : "v1";
    BlockManagerConfig.Mode mode =
        switch (modeText) {
          case "v1" -> BlockManagerConfig.Mode.V1;
          case "v0" -> BlockManagerConfig.Mode.V0;
          default -> throw line.error("mode", "'" + modeText + "' is not v1 or v0");
        };
    boolean v0 = mode == BlockManagerConfig.Mode.V0;
    for (String v0Only : new String[] {"watermark", "free_order", "num_host_blocks"}) {
      if (!v0 && line.has(v0Only)) {
        throw line.error(v0Only, "applies to mode v0 only (a setting of vLLM v0's block manager)");
      }
    }
    boolean schedulerGiven = false;
    for (String v1Only : SCHEDULER_FIELDS) {
      if (line.has(v1Only)) {
        if (v0) {
          throw line.error(v1Only, "applies to mode v1 only (submit and step run vLLM v1's scheduler)");
        }
        schedulerGiven = true;
      }
    }
    int numBlocks = line.integer("num_blocks", v0 ? 1 : 2, 1 << 28);
    int blockSize = line.integer("block_size", 1, 1 << 20);
    boolean caching = line.optBool("enable_caching", true);
    double watermark = line.optNumber("watermark", v0 ? BlockManagerConfig.DEFAULT_WATERMARK : 0, 0, 1);
    String orderText = line.has("free_order") ? line.string("free_order") : "lifo";
    BlockManagerConfig.FreeOrder order =
        switch (orderText) {
          case "lifo" -> BlockManagerConfig.FreeOrder.LIFO;
          case "fifo" -> BlockManagerConfig.FreeOrder.FIFO;
          default -> throw line.error("free_order", "'" + orderText + "' is not lifo or fifo");
        };
    int hostBlocks = line.optInteger("num_host_blocks", 0, 0, 1 << 28);
    int maxModelLen =
        line.optInteger("max_model_len", BlockManagerConfig.UNLIMITED_MODEL_LEN, 1, BlockManagerConfig.UNLIMITED_MODEL_LEN);
    long bytesPerToken = line.optInteger("bytes_per_token", (int) BlockManagerConfig.DEFAULT_BYTES_PER_TOKEN, 1, Integer.MAX_VALUE);
    showFreeQueue = line.optBool("show_free_queue", true);
    int maxBatched = line.optInteger("max_num_batched_tokens", SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS, 1, Integer.MAX_VALUE);
    int maxSeqs = line.optInteger("max_num_seqs", SchedulerConfig.DEFAULT_MAX_NUM_SEQS, 1, Integer.MAX_VALUE);
    boolean chunked = line.optBool("enable_chunked_prefill", true);
    int threshold = line.optInteger("long_prefill_token_threshold", 0, 0, Integer.MAX_VALUE);
    // vLLM's default gate; synchronous steps by default, as vLLM's scheduler unit tests run them.
    boolean reserveFullIsl = line.optBool("scheduler_reserve_full_isl", SchedulerConfig.DEFAULT_RESERVE_FULL_ISL);
    boolean async = line.optBool("async_scheduling", false);
    SchedulerConfig schedulerConfig = null;
    // A one-token model (max_model_len 1) can run no scheduler step; submit then says so.
    if (!v0 && maxModelLen >= 2) {
      try {
        schedulerConfig = new SchedulerConfig(maxBatched, maxSeqs, maxModelLen, chunked, threshold, SchedulerConfig.DEFAULT_WATERMARK, reserveFullIsl, async);
      } catch (IllegalArgumentException e) {
        throw line.error("enable_chunked_prefill", e.getMessage());
      }
    }
    try {
      manager =
          AllocatorRegistry.blockManager(
              new BlockManagerConfig(
                  numBlocks, blockSize, caching, mode, watermark, order, hostBlocks, maxModelLen, bytesPerToken));
    } catch (IllegalArgumentException e) {
      throw line.error(null, e.getMessage());
    }
    if (schedulerConfig != null) {
      serving = new ScriptedServing(manager, schedulerConfig);
    }
    out.put("mode", modeText);
    out.put("num_blocks", numBlocks);
    out.put("block_size", blockSize);
    out.put("enable_caching", caching);
    if (v0) {
      out.put("watermark", watermark);
      out.put("watermark_blocks", manager.config().watermarkBlocks());
      out.put("free_order", orderText);
      out.put("num_host_blocks", hostBlocks);
    }
    if (maxModelLen == BlockManagerConfig.UNLIMITED_MODEL_LEN) {
      out.putNull("max_model_len");
    } else {
      out.put("max_model_len", maxModelLen);
    }
    out.put("bytes_per_token", bytesPerToken);
    out.put("block_bytes", manager.config().blockBytes());
    if (schedulerGiven) {
      out.put("max_num_batched_tokens", maxBatched);
      out.put("max_num_seqs", maxSeqs);
      out.put("enable_chunked_prefill", chunked);
      out.put("long_prefill_token_threshold", threshold);
      out.put("scheduler_reserve_full_isl", reserveFullIsl);
      out.put("async_scheduling", async);
    }
    out.put("num_free_blocks", manager.numFreeBlocks());
    putFreeQueue(out);
  }

  private PagedRequest request(ScriptLine line, String field) {
    String id = line.string(field);
    if (serving != null && serving.manages(id)) {
      throw line.error(
          field,
          "request '" + id + "' was submitted, so the scheduler drives it: only step, state and reset_prefix_cache may touch it"
              + " until it finishes");
    }
    PagedRequest r = manager.request(id);
    if (r == null) {
      throw line.error(field, "unknown request '" + id + "' (never added, or already freed)");
    }
    return r;
  }

  private void add(ScriptLine line, JsonLine out) {
    line.allowOnly("req", "prompt", "prompt_range", "cache_salt", "lora", "hash_ids");
    String id = line.string("req");
    int[] prompt = prompt(line);
    long[] hashIds = line.has("hash_ids") ? line.longArray("hash_ids") : null;
    PagedRequest r = manager.addRequest(id, prompt, line.optString("lora"), line.optString("cache_salt"), hashIds);
    out.put("req", id);
    out.put("num_tokens", r.numTokens());
    out.put("num_block_hashes", r.numBlockHashes());
  }

  /** Returns the prompt of an add or submit line: its prompt or its prompt_range. */
  private static int[] prompt(ScriptLine line) {
    int[] prompt;
    if (line.has("prompt") == line.has("prompt_range")) {
      throw line.error("prompt", "give exactly one of prompt (token ids) and prompt_range ([lo, hi))");
    }
    if (line.has("prompt")) {
      prompt = line.intArray("prompt", 0, MAX_TOKEN);
    } else {
      int[] range = line.intArray("prompt_range", 0, MAX_TOKEN);
      if (range.length != 2 || range[0] >= range[1] || (long) range[1] - range[0] > MAX_RANGE) {
        throw line.error("prompt_range", "must be [lo, hi) with lo < hi and at most " + MAX_RANGE + " tokens");
      }
      prompt = new int[range[1] - range[0]];
      for (int k = 0; k < prompt.length; k++) {
        prompt[k] = range[0] + k;
      }
    }
    return prompt;
  }

  private void submit(ScriptLine line, JsonLine out) {
    line.allowOnly("req", "prompt", "prompt_range", "max_tokens", "output");
    if (serving == null) {
      throw line.error("op", "submit needs mode v1 and max_model_len of at least 2 (it runs vLLM v1's scheduler)");
    }
    String id = line.string("req");
    if (manager.request(id) != null) {
      throw line.error("req", "request '" + id + "' already exists");
    }
    int[] prompt = prompt(line);
    if (prompt.length == 0) {
      throw line.error("prompt", "must not be empty");
    }
    int maxTokens = line.integer("max_tokens", 1, Integer.MAX_VALUE);
    int[] output = line.has("output") ? line.intArray("output", 0, MAX_TOKEN) : null;
    if (output != null && output.length != maxTokens) {
      throw line.error("output", "has " + output.length + " tokens; it must list all max_tokens (" + maxTokens + ") sampled tokens");
    }
    int maxModelLen = manager.config().maxModelLen();
    String promptField = line.has("prompt") ? "prompt" : "prompt_range";
    if (prompt.length >= maxModelLen) {
      throw line.error(promptField, prompt.length + " tokens reach max_model_len " + maxModelLen + " (vLLM refuses such a request)");
    }
    if ((long) prompt.length + maxTokens > maxModelLen) {
      throw line.error("max_tokens", prompt.length + " prompt tokens + " + maxTokens + " pass max_model_len " + maxModelLen);
    }
    serving.submit(id, prompt, maxTokens, output);
    PagedRequest r = manager.request(id);
    out.put("req", id);
    out.put("num_tokens", r.numTokens());
    out.put("num_block_hashes", r.numBlockHashes());
    out.put("max_tokens", maxTokens);
  }

  private void step(ScriptLine line, JsonLine out) {
    line.allowOnly();
    if (serving == null) {
      throw line.error("op", "step needs mode v1 and max_model_len of at least 2 (it runs vLLM v1's scheduler)");
    }
    ScriptedServing.StepResult step = serving.step();
    out.put("step", step.step());
    JsonLine scheduled = out.putObject("scheduled");
    for (ScriptedServing.Scheduled s : step.scheduled()) {
      scheduled.put(s.req(), s.tokens());
    }
    JsonLine newBlocks = out.putObject("new_block_ids");
    for (ScriptedServing.Scheduled s : step.scheduled()) {
      putInts(newBlocks, s.req(), s.newBlockIds());
    }
    putStrings(out, "preempted", step.preempted());
    putStrings(out, "finished", step.finished());
    putStrings(out, "running", step.running());
    putStrings(out, "waiting", step.waiting());
    putPool(out);
    putStats(out);
  }

  private void lookup(ScriptLine line, JsonLine out) {
    line.allowOnly("req");
    PagedRequest r = request(line, "req");
    int hits = manager.lookup(r);
    out.put("req", r.id());
    out.put("hit_tokens", hits * manager.config().blockSize());
    putInts(out, "hit_blocks", manager.log().hitBlocks());
    putStats(out);
  }

  private void allocate(ScriptLine line, JsonLine out) {
    line.allowOnly("req", "num_new_tokens", "lookahead");
    PagedRequest r = request(line, "req");
    int n = line.integer("num_new_tokens", 0, Integer.MAX_VALUE);
    int lookahead = line.optInteger("lookahead", 0, 0, Integer.MAX_VALUE);
    boolean ok = manager.allocateSlots(r, n, lookahead);
    out.put("req", r.id());
    out.put("ok", ok);
    OpLog log = manager.log();
    out.put("hit_tokens", log.hitBlocks().length * manager.config().blockSize());
    putInts(out, "hit_blocks", log.hitBlocks());
    putAllocation(out, r);
  }

  private void admit(ScriptLine line, JsonLine out) {
    line.allowOnly("req");
    PagedRequest r = request(line, "req");
    boolean ok = manager.admit(r);
    OpLog log = manager.log();
    out.put("req", r.id());
    out.put("ok", ok);
    if (log.admission() != null) {
      out.put("can_allocate", log.admission().label());
    }
    out.put("hit_tokens", log.hitBlocks().length * manager.config().blockSize());
    putInts(out, "hit_blocks", log.hitBlocks());
    putAllocation(out, r);
    putStats(out);
  }

  private void append(ScriptLine line, JsonLine out) {
    line.allowOnly("req", "tokens");
    PagedRequest r = request(line, "req");
    int[] tokens = line.intArray("tokens", 0, MAX_TOKEN);
    if (tokens.length == 0) {
      throw line.error("tokens", "must not be empty");
    }
    manager.appendTokens(r, tokens);
    out.put("req", r.id());
    out.put("num_tokens", r.numTokens());
    out.put("num_block_hashes", r.numBlockHashes());
  }

  private void decode(ScriptLine line, JsonLine out) {
    line.allowOnly("req", "token");
    PagedRequest r = request(line, "req");
    int token = line.integer("token", 0, MAX_TOKEN);
    boolean ok = manager.decode(r, token);
    out.put("req", r.id());
    out.put("ok", ok);
    putAllocation(out, r);
  }

  private void free(ScriptLine line, JsonLine out) {
    line.allowOnly("req");
    PagedRequest r = request(line, "req");
    manager.free(r);
    out.put("req", r.id());
    putPool(out);
  }

  private void preempt(ScriptLine line, JsonLine out) {
    line.allowOnly("req");
    PagedRequest r = request(line, "req");
    manager.preempt(r);
    out.put("req", r.id());
    out.put("num_computed_tokens", r.numComputedTokens());
    out.put("num_preemptions", r.numPreemptions());
    putPool(out);
  }

  private void fork(ScriptLine line, JsonLine out) {
    line.allowOnly("parent", "child");
    PagedRequest parent = request(line, "parent");
    String childId = line.string("child");
    PagedRequest child = manager.fork(parent, childId);
    out.put("req", child.id());
    out.put("parent", parent.id());
    out.put("num_computed_tokens", child.numComputedTokens());
    int[] table = child.blockTable();
    putInts(out, "block_table", table);
    int[] refs = new int[table.length];
    for (int k = 0; k < table.length; k++) {
      refs[k] = manager.refCnt(table[k]);
    }
    putInts(out, "ref_cnt", refs);
    out.put("num_free_blocks", manager.numFreeBlocks());
  }

  private void swapOut(ScriptLine line, JsonLine out) {
    line.allowOnly("req");
    PagedRequest r = request(line, "req");
    boolean ok = manager.swapOut(r);
    out.put("req", r.id());
    out.put("ok", ok);
    putPairs(out, "mapping", manager.log().mapping());
    out.put("bytes_moved", manager.log().bytesMoved());
    putInts(out, "host_table", r.status() == PagedRequest.Status.SWAPPED ? r.blockTable() : new int[0]);
    out.put("num_free_host_blocks", manager.numFreeHostBlocks());
    putPool(out);
  }

  private void swapIn(ScriptLine line, JsonLine out) {
    line.allowOnly("req");
    PagedRequest r = request(line, "req");
    boolean ok = manager.swapIn(r);
    OpLog log = manager.log();
    out.put("req", r.id());
    out.put("ok", ok);
    if (log.admission() != null) {
      out.put("can_swap_in", log.admission().label());
    }
    putInts(out, "hit_blocks", log.hitBlocks());
    putInts(out, "new_blocks", log.newBlocks());
    putInts(out, "evicted", log.evicted());
    putInts(out, "newly_cached", log.newlyCached());
    putPairs(out, "mapping", log.mapping());
    out.put("bytes_moved", log.bytesMoved());
    putInts(out, "block_table", r.status() == PagedRequest.Status.RUNNING ? r.blockTable() : new int[0]);
    out.put("num_free_host_blocks", manager.numFreeHostBlocks());
    putPool(out);
  }

  private void reset(ScriptLine line, JsonLine out) {
    line.allowOnly();
    out.put("ok", manager.resetPrefixCache());
    putPool(out);
  }

  private void state(ScriptLine line, JsonLine out) {
    line.allowOnly();
    JsonLine.Array cached = out.putArray("cached");
    for (KvBlockManager.CachedBlock c : manager.cachedBlocks()) {
      JsonLine o = cached.addObject();
      o.put("block", c.block());
      o.put("hash", c.hashPrefix());
      o.put("ref_cnt", c.refCnt());
    }
    JsonLine.Array reqs = out.putArray("requests");
    for (PagedRequest r : manager.requests()) {
      JsonLine o = reqs.addObject();
      o.put("req", r.id());
      o.put("status", r.status().name().toLowerCase(Locale.ROOT));
      o.put("num_tokens", r.numTokens());
      o.put("num_computed_tokens", r.numComputedTokens());
      putInts(o, r.status() == PagedRequest.Status.SWAPPED ? "host_table" : "block_table", r.blockTable());
    }
    out.put("num_free_blocks", manager.numFreeBlocks());
    out.put("num_cached_blocks", manager.numCachedBlocks());
    JsonLine.Array q = out.putArray("free_queue");
    for (int b : manager.freeQueue()) {
      q.add(b);
    }
    putStats(out);
  }

  // ---------------------------------------------------------------------------------------------

  private void putAllocation(JsonLine out, PagedRequest r) {
    OpLog log = manager.log();
    putInts(out, "new_blocks", log.newBlocks());
    putInts(out, "evicted", log.evicted());
    putInts(out, "newly_cached", log.newlyCached());
    if (manager.config().mode() == BlockManagerConfig.Mode.V0) {
      putPairs(out, "copies", log.copies());
      putPairs(out, "dedups", log.dedups());
    }
    out.put("num_computed_tokens", r.numComputedTokens());
    out.put("num_tokens", r.numTokens());
    putBlockTable(out, r);
    putPool(out);
  }

  // Note [Block tables printed again]: every decode prints its request's whole block table, which
  // gains a block only once per block_size tokens, so most of a script's output is the same tables
  // printed again (60 numbers on each of 25,600 decodes in the benchmark script). The last encoding
  // of a table is kept in a small table of slots chosen by the request id's hash and used again
  // when the request's table is equal to it, element for element; otherwise the table is encoded
  // and replaces the slot's. What is printed never depends on the slots: a kept encoding is used
  // only for an equal table, whose bytes it is.
  private static final int TABLE_SLOTS = 256;
  private final int[][] tableValues = new int[TABLE_SLOTS][];
  private final byte[][] tableJson = new byte[TABLE_SLOTS][];

  private void putBlockTable(JsonLine out, PagedRequest r) {
    int[] table = r.blockTable();
    int slot = r.id().hashCode() & (TABLE_SLOTS - 1);
    byte[] json;
    if (Arrays.equals(tableValues[slot], table)) {
      json = tableJson[slot];
    } else {
      json = JsonSink.intsJson(table);
      tableValues[slot] = table; // a fresh array (PagedRequest.blockTable), never changed
      tableJson[slot] = json;
    }
    out.putIntsJson("block_table", json);
  }

  private void putPool(JsonLine out) {
    out.put("num_free_blocks", manager.numFreeBlocks());
    out.put("num_cached_blocks", manager.numCachedBlocks());
    putFreeQueue(out);
  }

  private void putFreeQueue(JsonLine out) {
    if (showFreeQueue) {
      putInts(out, "free_queue", manager.freeQueue());
    }
  }

  private void putStats(JsonLine out) {
    PrefixCacheStats s = manager.stats();
    JsonLine o = out.putObject("prefix_cache");
    o.put("requests", s.requests());
    o.put("queries", s.queries());
    o.put("hits", s.hits());
    o.put("preempted_requests", s.preemptedRequests());
    o.put("preempted_queries", s.preemptedQueries());
    o.put("preempted_hits", s.preemptedHits());
  }

  private static void putInts(JsonLine out, String field, int[] values) {
    out.putInts(field, values);
  }

  private static void putStrings(JsonLine out, String field, List<String> values) {
    JsonLine.Array a = out.putArray(field);
    for (String v : values) {
      a.add(v);
    }
  }

  private static void putPairs(JsonLine out, String field, int[] flat) {
    JsonLine.Array a = out.putArray(field);
    for (int k = 0; k + 1 < flat.length; k += 2) {
      JsonLine.Array pair = a.addArray();
      pair.add(flat[k]);
      pair.add(flat[k + 1]);
    }
  }
}
