package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import kvsim.serving.ContiguousKvManager.Reservation;
import kvsim.trace.Request;
import org.junit.jupiter.api.Test;

/** The contiguous KV manager's reservation policies, growth by copy, breakdown and refusals. */
class ContiguousKvManagerTest {
  static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");
  /** One token is 1 KiB, and the buddy's smallest block one token: reservations round to powers of two tokens. */
  static final long TOKEN = 1024;

  /** A manager over a buddy allocator of {@code tokens} one-KiB tokens (a power of two: one top-level block). */
  static ContiguousKvManager buddy(long tokens, Reservation r, int maxModelLen) {
    Region region = new Region("kv", 0, tokens * TOKEN);
    Allocator a = AllocatorRegistry.create(new AllocatorContext("buddy", region, DEVICE, MODEL, Map.of("min-block", "1KiB")));
    return new ContiguousKvManager(a, tokens * TOKEN, r, TOKEN, maxModelLen, 1e12);
  }

  static Sequence seq(long id, int prompt, int output) {
    return new Sequence(Request.of(id, 0, prompt, output), output);
  }

  private static long[] breakdown(KvManager kv) {
    long[] out = new long[5];
    kv.breakdown(out);
    return out;
  }

  @Test
  void eachPolicyReservesItsTokensAtAdmission() {
    // prompt 100 + output 200: final length 300.
    assertEquals(600, reserve(Reservation.MAX, 100, 200, 600), "max_model_len");
    assertEquals(512, reserve(Reservation.POW2, 100, 200, 600), "next power of two of 300");
    assertEquals(300, reserve(Reservation.ORACLE, 100, 200, 600), "prompt + output");
    assertEquals(100, reserve(Reservation.GROW, 100, 200, 600), "the prompt");
    assertEquals(256, reserve(Reservation.POW2, 56, 200, 600), "a power of two stays itself");
    assertEquals(500, reserve(Reservation.POW2, 100, 400, 500), "at most max_model_len");
  }

  private static long reserve(Reservation r, int prompt, int output, int maxModelLen) {
    ContiguousKvManager kv = buddy(1024, r, maxModelLen);
    Sequence s = seq(1, prompt, output);
    kv.add(s);
    assertTrue(kv.allocate(s, prompt));
    assertEquals(prompt, s.numComputedTokens());
    assertEquals(1, kv.allocator().stats().liveAllocations());
    return kv.allocator().stats().requestedBytes() / TOKEN;
  }

  @Test
  void withinItsReservationASequenceGrowsWithoutTheAllocator() {
    ContiguousKvManager kv = buddy(1024, Reservation.ORACLE, 512);
    Sequence s = seq(1, 100, 20);
    kv.add(s);
    assertTrue(kv.allocate(s, 100));
    long nanos = kv.modelledNanos();
    long allocated = kv.allocator().stats().allocatedBytes();
    for (int i = 0; i < 19; i++) {
      sampleOne(s, kv);
      assertTrue(kv.allocate(s, 1));
    }
    assertEquals(119, s.numComputedTokens());
    assertEquals(nanos, kv.modelledNanos(), "no allocator call, no time");
    assertEquals(allocated, kv.allocator().stats().allocatedBytes());
    assertEquals(0, kv.counters().get("copies"));
  }

  @Test
  void growDoublesCopiesAndFreesTheOldBuffer() {
    ContiguousKvManager kv = buddy(1024, Reservation.GROW, 512);
    Sequence s = seq(1, 100, 400);
    kv.add(s);
    assertTrue(kv.allocate(s, 100));
    sampleOne(s, kv);
    long before = kv.modelledNanos();
    assertTrue(kv.allocate(s, 1));
    assertEquals(1, kv.allocator().stats().liveAllocations(), "the old buffer was freed");
    assertEquals(200 * TOKEN, kv.allocator().stats().requestedBytes());
    assertEquals(1, kv.counters().get("copies"));
    assertEquals(100 * TOKEN, kv.counters().get("copied_bytes"), "the computed tokens are copied");
    long copy = Math.round(100 * TOKEN / 1e12 * 1e9);
    assertEquals(copy, kv.counters().get("copy_nanos"));
    assertTrue(kv.modelledNanos() - before >= copy, "the copy is on the critical path");
    // 200 → 400, then capped at max_model_len: 512, not 800.
    while (s.numComputedTokens() < 401) {
      sampleOne(s, kv);
      assertTrue(kv.allocate(s, 1));
    }
    assertEquals(512 * TOKEN, kv.allocator().stats().requestedBytes());
    assertEquals(3, kv.counters().get("copies"));
    kv.checkInvariants();
  }

  @Test
  void aFailedGrowthKeepsTheOldBufferAndChangesNothing() {
    // 256 tokens of memory: a buffer of 128 cannot grow to 256 while it is held.
    ContiguousKvManager kv = buddy(256, Reservation.GROW, 256);
    Sequence s = seq(1, 128, 10);
    kv.add(s);
    assertTrue(kv.allocate(s, 128));
    sampleOne(s, kv);
    assertFalse(kv.allocate(s, 1));
    assertEquals(128, s.numComputedTokens());
    assertEquals(128 * TOKEN, kv.allocator().stats().requestedBytes());
    assertEquals(1, kv.counters().get("reservations_refused"));
    assertEquals(0, kv.counters().get("copies"));
    kv.checkInvariants();
  }

  @Test
  void aFailedAdmissionChangesNothingAndSaysWhetherFragmentationCausedIt() {
    ContiguousKvManager kv = buddy(1024, Reservation.ORACLE, 1024);
    Sequence a = seq(1, 200, 56); // 256 tokens: [0, 256)
    Sequence b = seq(2, 200, 56); // [256, 512)
    Sequence c = seq(3, 200, 56); // [512, 768)
    for (Sequence s : new Sequence[] {a, b, c}) {
      kv.add(s);
      assertTrue(kv.allocate(s, 200));
    }
    kv.finish(a);
    // 512 tokens free ([0, 256) and [768, 1024)) but no 512-token block.
    Sequence d = seq(4, 400, 112);
    kv.add(d);
    assertFalse(kv.allocate(d, 400));
    assertEquals(0, d.numComputedTokens());
    assertNull(d.kvState(ContiguousKvManager.STATE));
    assertEquals(1, kv.counters().get("fragmentation_refusals"));
    assertEquals(2, kv.allocator().stats().liveAllocations());
  }

  @Test
  void theBreakdownSplitsReservationsAndTellsAllocatorRoundingFromFreeMemory() {
    ContiguousKvManager kv = buddy(1024, Reservation.MAX, 600);
    Sequence s = seq(1, 100, 200); // final 300; reserves 600 tokens, which the buddy rounds to 1024
    kv.add(s);
    assertTrue(kv.allocate(s, 100));
    // 100 computed, 200 still to come, 300 reserved beyond the final length; nothing free (the
    // buddy handed out the whole region), the 424 tokens of rounding are the allocator's.
    assertArrayEquals(new long[] {100, 200, 300, 0, 424}, breakdown(kv));
    kv.finish(s);
    assertArrayEquals(new long[] {0, 0, 0, 1024, 0}, breakdown(kv));
    assertEquals(0, kv.allocator().stats().allocatedBytes());
  }

  @Test
  void preemptionAndFinishReturnTheBuffer() {
    ContiguousKvManager kv = buddy(1024, Reservation.POW2, 512);
    Sequence a = seq(1, 100, 20);
    Sequence b = seq(2, 100, 20);
    kv.add(a);
    kv.add(b);
    assertTrue(kv.allocate(a, 100));
    assertTrue(kv.allocate(b, 100));
    kv.preempt(a);
    kv.finish(b);
    assertEquals(0, kv.allocator().stats().liveAllocations());
    assertEquals(0, kv.allocator().stats().requestedBytes());
    kv.checkInvariants();
  }

  @Test
  void capacityIsTheLargestBufferAndAThirdOfItForGrowth() {
    assertEquals(1024, buddy(1024, Reservation.ORACLE, 512).capacityTokens());
    assertEquals(341, buddy(1024, Reservation.GROW, 341).capacityTokens());
  }

  @Test
  void onlyContiguousAllocatorsAreAccepted() {
    InputException e = assertThrows(InputException.class,
        () -> ContiguousKvManager.create("slab", Map.of(), 1L << 30, DEVICE, MODEL, Reservation.MAX, 2048));
    assertTrue(e.getMessage().contains("not contiguous"), e.getMessage());
    ContiguousKvManager kv = ContiguousKvManager.create("first-fit", Map.of(), 4L << 30, DEVICE, MODEL, Reservation.MAX, 2048);
    assertEquals("first-fit", kv.allocator().name());
  }

  /** The sequence, caught up, samples a token: it runs and its tokens grow by one. */
  private static void sampleOne(Sequence s, KvManager kv) {
    if (s.status() == Sequence.Status.WAITING) {
      s.admit();
    }
    s.sample(kv, 0);
  }
}
