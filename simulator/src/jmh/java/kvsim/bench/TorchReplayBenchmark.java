package kvsim.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.caching.ReplayDriver;
import kvsim.core.Tag;
import kvsim.torch.ReplayVerifier;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;

/**
 * Speed of the pytorch-caching model replaying a real recording: the model is rebuilt at the start
 * of the largest shared snapshot's recording and its alloc/free entries are replayed; one operation
 * is one malloc together with the frees that follow it in the trace (about one each). The rebuild
 * happens outside the measurement, whenever the trace runs out.
 *
 * <p>The snapshot is read from {@code -Dkvsim.shared=DIR} (default: {@code ../shared/data}
 * relative to the working folder); when it is absent, a message says so and a synthetic churn
 * trace on an empty model is measured instead.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Threads(1)
@Fork(1)
public class TorchReplayBenchmark {
  /** Mallocs per measured invocation. */
  static final int BATCH = 1000;

  @Param({"cs336_wedsonlin_medium_512_training.pickle"})
  public String snapshot;

  private TorchSnapshot snap;
  private kvsim.alloc.caching.TorchAllocConf conf;
  private List<kvsim.alloc.SegmentLayout> start;
  // Replay program: kind (0 alloc, 1 free, 2 queue segment), arguments.
  private byte[] kind;
  private long[] arg0;
  private long[] arg1;
  private int[] slot;
  private int slots;
  private Map<Long, Integer> preludeSlot;
  private boolean synthetic;

  private CachingAllocator model;
  private ReplayDriver driver;
  private long[] handleOfSlot;
  private int cursor;
  private int allocsLeft;

  @Setup(Level.Trial)
  public void load() throws Exception {
    Path dir = Path.of(System.getProperty("kvsim.shared", "../shared/data"));
    Path file = dir.resolve("torch-snapshots").resolve(snapshot);
    if (!Files.exists(file)) {
      System.out.println("TorchReplayBenchmark: " + file + " is absent; measuring a synthetic churn trace instead (set -Dkvsim.shared=DIR)");
      synthetic = true;
      buildSynthetic();
      return;
    }
    snap = SnapshotReader.read(file);
    List<TorchSnapshot.Entry> trace = snap.traceOf(0);
    conf = kvsim.torch.SnapshotSettings.conf(snap);
    start = ReplayVerifier.startState(snap, 0, newModel());
    // Slots for blocks live at the start: found by building the model once.
    Map<Long, Long> handles = new HashMap<>();
    ReplayVerifier.restore(newModel(), start, handles);
    preludeSlot = new HashMap<>();
    Map<Long, Integer> live = new HashMap<>();
    for (Long addr : handles.keySet()) {
      int s = slots++;
      preludeSlot.put(addr, s);
      live.put(addr, s);
    }
    List<Byte> k = new ArrayList<>();
    List<long[]> args = new ArrayList<>();
    List<Integer> sl = new ArrayList<>();
    for (TorchSnapshot.Entry e : trace) {
      switch (e.action()) {
        case "alloc" -> {
          int s = slots++;
          live.put(e.addr(), s);
          k.add((byte) 0);
          args.add(new long[] {e.size(), e.stream()});
          sl.add(s);
        }
        case "free_completed" -> {
          Integer s = live.remove(e.addr());
          if (s != null) {
            k.add((byte) 1);
            args.add(new long[] {0, 0});
            sl.add(s);
          }
        }
        case "segment_alloc" -> {
          k.add((byte) 2);
          args.add(new long[] {e.addr(), e.size()});
          sl.add(-1);
        }
        default -> {}
      }
    }
    kind = new byte[k.size()];
    arg0 = new long[k.size()];
    arg1 = new long[k.size()];
    slot = new int[k.size()];
    for (int i = 0; i < kind.length; i++) {
      kind[i] = k.get(i);
      arg0[i] = args.get(i)[0];
      arg1[i] = args.get(i)[1];
      slot[i] = sl.get(i);
    }
    handleOfSlot = new long[slots];
    prewarm();
  }

  /** Replays the trace a few times before measuring, so the first timed iterations are compiled code too. */
  private void prewarm() {
    for (int round = 0; round < 20; round++) {
      model = null;
      ensureTraceLeft();
      while (allocsLeft >= BATCH) {
        replay();
      }
    }
    model = null;
  }

  private CachingAllocator newModel() {
    return new CachingAllocator(conf, kvsim.alloc.caching.TieBreak.ADDRESS, driver == null ? new ReplayDriver() : driver, 80L << 30);
  }

  private void buildSynthetic() {
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(1);
    int n = 20_000;
    kind = new byte[2 * n];
    arg0 = new long[2 * n];
    arg1 = new long[2 * n];
    slot = new int[2 * n];
    List<Integer> live = new ArrayList<>();
    int j = 0;
    for (int i = 0; i < n; i++) {
      kind[j] = 0;
      arg0[j] = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(1 << 20) : (1 << 20) + rnd.nextInt(32 << 20);
      slot[j++] = i;
      live.add(i);
      if (live.size() > 200) {
        kind[j] = 1;
        slot[j++] = live.remove(rnd.nextInt(live.size()));
      }
    }
    kind = java.util.Arrays.copyOf(kind, j);
    slots = n;
    handleOfSlot = new long[slots];
    prewarm();
  }

  @Setup(Level.Invocation)
  public void ensureTraceLeft() {
    if (model != null && allocsLeft >= BATCH) {
      return;
    }
    driver = new ReplayDriver();
    if (synthetic) {
      model = new CachingAllocator(kvsim.alloc.caching.TorchAllocConf.defaults(), kvsim.alloc.caching.TieBreak.ADDRESS, new kvsim.devicemodel.Region("all", 0, 80L << 30));
    } else {
      Map<Long, Long> handles = new HashMap<>();
      model = newModel();
      ReplayVerifier.restore(model, start, handles);
      for (Map.Entry<Long, Long> h : handles.entrySet()) {
        handleOfSlot[preludeSlot.get(h.getKey())] = h.getValue();
      }
    }
    cursor = 0;
    allocsLeft = 0;
    for (byte b : kind) {
      allocsLeft += b == 0 ? 1 : 0;
    }
  }

  /** Replays the next 1000 mallocs of the trace with the frees between them. */
  @Benchmark
  @OperationsPerInvocation(BATCH)
  public long replay() {
    long sum = 0;
    int done = 0;
    int i = cursor;
    while (done < BATCH) {
      switch (kind[i]) {
        case 0 -> {
          AllocOutcome o = model.allocate(new AllocRequest(arg0[i], Tag.TEMP, false, arg1[i]));
          long h = ((AllocOutcome.Allocated) o).handle();
          handleOfSlot[slot[i]] = h;
          sum += h;
          done++;
        }
        case 1 -> model.free(handleOfSlot[slot[i]]);
        default -> driver.queue("segment_alloc", arg0[i], arg1[i]);
      }
      i++;
    }
    // Frees directly after the last malloc belong to this batch too.
    while (i < kind.length && kind[i] == 1) {
      model.free(handleOfSlot[slot[i++]]);
    }
    cursor = i;
    allocsLeft -= BATCH;
    return sum;
  }
}
