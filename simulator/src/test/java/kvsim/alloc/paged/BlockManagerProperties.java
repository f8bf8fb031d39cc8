package kvsim.alloc.paged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.SplittableRandom;
import kvsim.alloc.InvariantViolation;
import org.junit.jupiter.api.Test;

/**
 * Random scripts, 1,000 scripts of 1,000 operations per mode, with either block hash: after every
 * operation the invariant checker passes and the manager agrees with {@link ReferenceBlockManager},
 * which knows a block by its whole prefix instead of a hash, block id for block id
 * (return values, hits, new blocks, evictions, newly cached blocks, copies, deduplications, swap
 * mappings, tables, the whole free queue, statistics). Refused operations change nothing, and
 * misuse is rejected before anything changes. Each script is seeded, so a failure names the seed
 * and the operations that led to it.
 */
class BlockManagerProperties {
  private static final int SCRIPTS = 1000;
  private static final int OPS = 1000;

  /** What the random scripts exercised, so that a generator gone blind fails the test. */
  private static final class Coverage {
    long ops;
    long hits;
    long evictions;
    long newlyCached;
    long refusals;
    long copies;
    long dedups;
    long swapOuts;
    long swapIns;
    long misuses;
    long shortSlots;

    void require(boolean v0) {
      assertEquals((long) SCRIPTS * OPS, ops);
      assertTrue(hits > 10_000, "prefix hits: " + hits);
      assertTrue(evictions > 10_000, "evictions: " + evictions);
      assertTrue(newlyCached > 10_000, "newly cached: " + newlyCached);
      assertTrue(refusals > 1_000, "refused allocations: " + refusals);
      assertTrue(misuses > 1_000, "rejected misuse: " + misuses);
      if (!v0) {
        assertTrue(shortSlots > 1_000, "allocations within the table (Note [Slots within the table]): " + shortSlots);
      }
      if (v0) {
        assertTrue(copies > 1_000, "copy-on-write: " + copies);
        assertTrue(dedups > 100, "deduplications: " + dedups);
        assertTrue(swapOuts > 1_000 && swapIns > 1_000, "swaps: " + swapOuts + " out, " + swapIns + " in");
      }
    }
  }

  @Test
  void randomV1ScriptsKeepEveryInvariantAndMatchTheReferenceModel() {
    Coverage c = new Coverage();
    for (int seed = 0; seed < SCRIPTS; seed++) {
      new Driver(seed, false, c).run();
    }
    c.require(false);
  }

  /** The same v1 scripts with allocateSlots always taking its long way (Note [Slots within the table] in BlockManager). */
  @Test
  void randomV1ScriptsMatchTheReferenceModelWithoutTheShortWay() {
    Coverage c = new Coverage();
    for (int seed = 0; seed < SCRIPTS; seed++) {
      Driver d = new Driver(seed, false, c);
      d.m.slotsFastPath(false);
      d.run();
    }
    c.require(false);
  }

  @Test
  void randomV0ScriptsKeepEveryInvariantAndMatchTheReferenceModel() {
    Coverage c = new Coverage();
    for (int seed = 0; seed < SCRIPTS; seed++) {
      new Driver(1_000_000 + seed, true, c).run();
    }
    c.require(true);
  }

  @Test
  void theCheckerCatchesACorruptedReferenceCount() {
    BlockManager m = BlockManager.of(BlockManagerConfig.v1(9, 4, true));
    PagedRequest a = m.addRequest("A", ManagerDump.range(0, 9), null, null);
    m.admit(a);
    m.checkInvariants();
    a.table.set(0, 7); // a table entry the pool never handed out
    assertThrows(InvariantViolation.class, m::checkInvariants);
  }

  @Test
  void theCheckerCatchesASharedBlockThatV1WouldWriteInto() {
    BlockManager m = BlockManager.of(BlockManagerConfig.v1(9, 4, true));
    PagedRequest a = m.addRequest("A", ManagerDump.range(0, 6), null, null);
    PagedRequest b = m.addRequest("B", ManagerDump.range(100, 106), null, null);
    m.admit(a);
    m.admit(b);
    m.checkInvariants();
    // A's second block holds tokens 4..5 of 6 and takes its next ones: give B a reference to it too.
    int partial = a.table.get(1);
    b.table.add(partial);
    m.pool.touch(partial);
    InvariantViolation e = assertThrows(InvariantViolation.class, m::checkInvariants);
    assertTrue(e.getMessage().contains("is shared (2 references)"), e.getMessage());
  }

  /** One random script against both models. */
  private static final class Driver {
    private final long seed;
    private final SplittableRandom rng;
    private final Coverage coverage;
    private final boolean v0;
    private final BlockManagerConfig config;
    private final BlockManager m;
    private final ReferenceBlockManager ref;
    private final int bs;
    private final List<String> live = new ArrayList<>();
    private final Deque<String> history = new ArrayDeque<>();
    private PagedRequest finished;
    private int nextId;
    private int op;

    Driver(long seed, boolean v0, Coverage coverage) {
      this.seed = seed;
      this.coverage = coverage;
      this.rng = new SplittableRandom(seed);
      this.v0 = v0;
      int numBlocks = (v0 ? 3 : 4) + rng.nextInt(22);
      bs = 1 + rng.nextInt(4);
      boolean caching = rng.nextInt(100) < 85;
      double watermark = v0 ? new double[] {0, 0.01, 0.1}[rng.nextInt(3)] : 0;
      BlockManagerConfig.FreeOrder order =
          rng.nextBoolean() ? BlockManagerConfig.FreeOrder.LIFO : BlockManagerConfig.FreeOrder.FIFO;
      int hosts = v0 ? rng.nextInt(17) : 0;
      int maxLen = rng.nextBoolean() ? BlockManagerConfig.UNLIMITED_MODEL_LEN : 4 * bs + rng.nextInt(60);
      config =
          new BlockManagerConfig(
              numBlocks,
              bs,
              caching,
              v0 ? BlockManagerConfig.Mode.V0 : BlockManagerConfig.Mode.V1,
              watermark,
              order,
              hosts,
              maxLen,
              16,
              // Either hash: the reference knows blocks by their whole prefix, so both must answer alike.
              rng.nextBoolean() ? BlockHasher.Algorithm.SHA256 : BlockHasher.Algorithm.MURMUR3);
      m = BlockManager.of(config);
      ref = new ReferenceBlockManager(config);
    }

    void run() {
      for (op = 0; op < OPS; op++) {
        try {
          step();
          coverage.ops++;
          m.checkInvariants();
          compareGlobal();
        } catch (AssertionError | RuntimeException e) {
          throw new AssertionError(
              "seed " + seed + " (" + (v0 ? "v0" : "v1") + ", " + config + "), operation " + op + ": " + e
                  + "\nlast operations:\n  " + String.join("\n  ", history),
              e);
        }
      }
    }

    private void note(String what) {
      history.addLast(op + ": " + what);
      if (history.size() > 40) {
        history.removeFirst();
      }
    }

    private PagedRequest pick(PagedRequest.Status status) {
      List<PagedRequest> c = new ArrayList<>();
      for (String id : live) {
        PagedRequest r = m.request(id);
        if (status == null || r.status() == status) {
          c.add(r);
        }
      }
      return c.isEmpty() ? null : c.get(rng.nextInt(c.size()));
    }

    private int[] prompt() {
      int family = rng.nextInt(4);
      int len = 1 + rng.nextInt(5 * bs + 3);
      int shared = rng.nextInt(len + 1);
      int[] t = new int[len];
      for (int i = 0; i < len; i++) {
        t[i] = i < shared ? family * 1000 + i : rng.nextInt(3);
      }
      return t;
    }

    private boolean fits(PagedRequest r, int more) {
      return (long) r.numTokens() + more <= config.maxModelLen();
    }

    private void step() {
      int roll = rng.nextInt(100);
      if (roll < 12 || live.isEmpty()) {
        add();
      } else if (roll < 24) {
        withRequest(PagedRequest.Status.WAITING, this::admit);
      } else if (roll < 32) {
        withRequest(PagedRequest.Status.WAITING, this::lookupAllocate);
      } else if (roll < 38) {
        withRequest(PagedRequest.Status.RUNNING, this::chunk);
      } else if (roll < 60) {
        withRequest(null, this::decode);
      } else if (roll < 64) {
        withRequest(null, this::append);
      } else if (roll < 74) {
        withRequest(null, this::free);
      } else if (roll < 79) {
        withRequest(PagedRequest.Status.RUNNING, this::preempt);
      } else if (roll < 80) {
        reset();
      } else if (roll < 92 && !v0) {
        withRequest(null, this::decode);
      } else if (roll < 92) {
        int k = rng.nextInt(3);
        if (k == 0) {
          withRequest(PagedRequest.Status.RUNNING, this::fork);
        } else if (k == 1) {
          withRequest(PagedRequest.Status.RUNNING, this::swapOut);
        } else {
          withRequest(PagedRequest.Status.SWAPPED, this::swapIn);
        }
      } else {
        misuse();
      }
    }

    private void withRequest(PagedRequest.Status status, java.util.function.Consumer<PagedRequest> action) {
      PagedRequest r = pick(status);
      if (r == null) {
        add();
      } else {
        action.accept(r);
      }
    }

    private void add() {
      if (live.size() >= 10) {
        free(pick(null));
        return;
      }
      String id = "r" + nextId++;
      int[] p = prompt();
      if (p.length > config.maxModelLen()) {
        p = Arrays.copyOf(p, config.maxModelLen());
      }
      String salt = rng.nextInt(10) == 0 ? "s" + rng.nextInt(2) : null;
      String lora = rng.nextInt(10) == 0 ? "l" + rng.nextInt(2) : null;
      note("add " + id + " " + Arrays.toString(p) + " salt=" + salt + " lora=" + lora);
      m.addRequest(id, p, lora, salt);
      ref.add(id, p, lora, salt);
      live.add(id);
    }

    private void admit(PagedRequest r) {
      if (v0 && rng.nextInt(3) == 0 && !fits(r, 0)) {
        return;
      }
      note("admit " + r.id());
      String before = snapshot();
      boolean ok = m.admit(r);
      assertEquals(ref.admit(r.id()), ok, "admit result");
      coverage.refusals += ok ? 0 : 1;
      compareLog(r);
      if (!ok) {
        assertUnchangedExceptStats(before);
      }
    }

    private void lookupAllocate(PagedRequest r) {
      note("lookup " + r.id());
      int hits = m.lookup(r);
      assertEquals(ref.lookup(r.id()), hits, "lookup hits");
      compareLog(r);
      int left = r.numTokens() - hits * bs;
      int n = 1 + rng.nextInt(left);
      int lookahead = rng.nextInt(3) == 0 ? rng.nextInt(2 * bs + 1) : 0;
      note("allocate " + r.id() + " " + n + " lookahead " + lookahead);
      String before = snapshot();
      if (m.fitsItsBlocks(r, n, lookahead)) {
        coverage.shortSlots++;
      }
      boolean ok = m.allocateSlots(r, n, lookahead);
      assertEquals(ref.allocate(r.id(), n, lookahead), ok, "allocate result");
      coverage.refusals += ok ? 0 : 1;
      compareLog(r);
      if (!ok && before != null) {
        assertEquals(before, ManagerDump.of(m), "a refused allocation changes nothing");
      }
    }

    private void chunk(PagedRequest r) {
      int left = r.numTokens() - r.numComputedTokens();
      if (left == 0) {
        decode(r);
        return;
      }
      int n = 1 + rng.nextInt(left);
      int lookahead = rng.nextInt(4) == 0 ? rng.nextInt(2 * bs + 1) : 0;
      note("allocate " + r.id() + " " + n + " lookahead " + lookahead);
      String before = snapshot();
      if (m.fitsItsBlocks(r, n, lookahead)) {
        coverage.shortSlots++;
      }
      boolean ok = m.allocateSlots(r, n, lookahead);
      assertEquals(ref.allocate(r.id(), n, lookahead), ok, "allocate result");
      coverage.refusals += ok ? 0 : 1;
      compareLog(r);
      if (!ok && before != null) {
        assertEquals(before, ManagerDump.of(m), "a refused allocation changes nothing");
      }
    }

    private void decode(PagedRequest r) {
      if (r.status() == PagedRequest.Status.SWAPPED || !fits(r, 1)) {
        free(r);
        return;
      }
      if (r.numTokens() > 48 && rng.nextInt(4) == 0) {
        free(r);
        return;
      }
      int token = rng.nextInt(3);
      note("decode " + r.id() + " " + token);
      String before = snapshot();
      boolean ok = m.decode(r, token);
      assertEquals(ref.decode(r.id(), token), ok, "decode result");
      compareLog(r);
      if (!ok && before != null) {
        assertEquals(before, ManagerDump.of(m), "a refused decode changes nothing");
      }
    }

    private void append(PagedRequest r) {
      int k = 1 + rng.nextInt(3);
      if (r.status() == PagedRequest.Status.SWAPPED || !fits(r, k)) {
        return;
      }
      int[] t = new int[k];
      for (int i = 0; i < k; i++) {
        t[i] = rng.nextInt(3);
      }
      note("append " + r.id() + " " + Arrays.toString(t));
      m.appendTokens(r, t);
      ref.append(r.id(), t);
    }

    private void free(PagedRequest r) {
      note("free " + r.id());
      m.free(r);
      ref.free(r.id());
      live.remove(r.id());
      finished = r;
    }

    private void preempt(PagedRequest r) {
      note("preempt " + r.id());
      m.preempt(r);
      ref.preempt(r.id());
      compareTable(r);
    }

    private void reset() {
      note("reset_prefix_cache");
      boolean ok = m.resetPrefixCache();
      assertEquals(ref.reset(), ok, "reset result");
    }

    private void fork(PagedRequest r) {
      if (live.size() >= 10) {
        free(r);
        return;
      }
      String id = "r" + nextId++;
      note("fork " + r.id() + " -> " + id);
      PagedRequest c = m.fork(r, id);
      ref.fork(r.id(), id);
      live.add(id);
      compareTable(c);
    }

    private void swapOut(PagedRequest r) {
      note("swap_out " + r.id());
      String before = snapshot();
      boolean ok = m.swapOut(r);
      assertEquals(ref.swapOut(r.id(), config.blockBytes()), ok, "swap_out result");
      coverage.swapOuts += ok ? 1 : 0;
      compareLog(r);
      if (ok) {
        assertEquals(config.blockBytes() * r.blockTable().length, m.log().bytesMoved(), "bytes moved out");
      } else if (before != null) {
        assertEquals(before, ManagerDump.of(m));
      }
    }

    private void swapIn(PagedRequest r) {
      note("swap_in " + r.id());
      String before = snapshot();
      boolean ok = m.swapIn(r);
      assertEquals(ref.swapIn(r.id()), ok, "swap_in result");
      coverage.swapIns += ok ? 1 : 0;
      compareLog(r);
      if (ok) {
        assertEquals(config.blockBytes() * m.log().newBlocks().length, m.log().bytesMoved(), "bytes moved in");
      } else if (before != null) {
        assertEquals(before, ManagerDump.of(m));
      }
    }

    private void misuse() {
      String before = ManagerDump.of(m);
      PagedRequest running = pick(PagedRequest.Status.RUNNING);
      PagedRequest waiting = pick(PagedRequest.Status.WAITING);
      int k = rng.nextInt(6);
      note("misuse " + k);
      if (k == 0 && running != null) {
        assertThrows(BlockOpException.class, () -> m.lookup(running));
      } else if (k == 1 && running != null) {
        assertThrows(BlockOpException.class, () -> m.allocateSlots(running, 0, 0));
      } else if (k == 2 && running != null) {
        int over = running.numTokens() - running.numComputedTokens() + 1;
        assertThrows(BlockOpException.class, () -> m.allocateSlots(running, over, 0));
      } else if (k == 3 && waiting != null) {
        assertThrows(BlockOpException.class, () -> m.preempt(waiting));
      } else if (k == 4 && finished != null) {
        PagedRequest gone = finished;
        assertThrows(BlockOpException.class, () -> m.decode(gone, 1));
      } else if (k == 5 && !v0 && running != null) {
        assertThrows(BlockOpException.class, () -> m.fork(running, "x"));
      } else {
        return;
      }
      assertEquals(before, ManagerDump.of(m), "misuse changes nothing");
      coverage.misuses++;
    }

    /** Returns a full dump before one operation in eight (dumps are slow; the reference covers the rest). */
    private String snapshot() {
      return rng.nextInt(8) == 0 ? ManagerDump.of(m) : null;
    }

    private void assertUnchangedExceptStats(String before) {
      if (before == null) {
        return;
      }
      String after = ManagerDump.of(m);
      assertEquals(before.substring(0, before.indexOf(" stats=")), after.substring(0, after.indexOf(" stats=")), "a refused admission changes no block");
    }

    private void compareLog(PagedRequest r) {
      OpLog l = m.log();
      ReferenceBlockManager.Log e = ref.log;
      same("hit blocks", e.hits, l.hitBlocks());
      same("new blocks", e.newBlocks, l.newBlocks());
      same("evicted", e.evicted, l.evicted());
      same("newly cached", e.newlyCached, l.newlyCached());
      same("copies", e.copies, l.copies());
      same("dedups", e.dedups, l.dedups());
      same("mapping", e.mapping, l.mapping());
      assertEquals(e.admission, l.admission() == null ? null : l.admission().name(), "admission");
      compareTable(r);
      coverage.hits += l.hitBlocks().length;
      coverage.evictions += l.evicted().length;
      coverage.newlyCached += l.newlyCached().length;
      coverage.copies += l.copies().length / 2;
      coverage.dedups += l.dedups().length / 2;
    }

    private void compareTable(PagedRequest r) {
      same("table of " + r.id(), ref.table(r.id()), r.blockTable());
      assertEquals(ref.reqs.get(r.id()).computed, r.numComputedTokens(), "computed tokens of " + r.id());
    }

    private void compareGlobal() {
      same("free queue", ref.freeOrder(), m.freeQueue());
      assertEquals(ref.numCachedBlocks(), m.numCachedBlocks(), "cached blocks");
      PrefixCacheStats s = m.stats();
      assertEquals(
          List.of(ref.sReq, ref.sQ, ref.sH, ref.pReq, ref.pQ, ref.pH),
          List.of(s.requests(), s.queries(), s.hits(), s.preemptedRequests(), s.preemptedQueries(), s.preemptedHits()),
          "prefix cache stats");
      if (op % 50 == 0) {
        for (String id : live) {
          compareTable(m.request(id));
        }
      }
    }

    private static void same(String what, List<Integer> expected, int[] actual) {
      boolean equal = expected.size() == actual.length;
      for (int i = 0; equal && i < actual.length; i++) {
        equal = expected.get(i) == actual[i];
      }
      if (!equal) {
        int[] e = expected.stream().mapToInt(Integer::intValue).toArray();
        throw new AssertionError(what + ": reference " + Arrays.toString(e) + ", manager " + Arrays.toString(actual));
      }
    }
  }
}
