package kvsim.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;

/**
 * The memory plan at run time: one allocator model per region of the device, and the rule that
 * sends each request to one of them. Region 0 is the region under test, whose gauges the run's
 * metrics describe; every other region has a predicate, and a request goes to the first other
 * region whose predicate takes it, else to region 0. An L1 run with vLLM's two-pool layout has two
 * regions (unsplittable requests to the activations region); an L2 run may add more.
 *
 * <p>Note [Handle encoding]: the engine maps a trace id to one {@code long} that names both the
 * region and the model's handle: the region index in bits 56-62, the handle below. Models hand out
 * handles below 2^56 (they are indices into their own tables); {@link #encode} checks it, so the
 * encoding can never alias.
 */
public final class RegionRouter {
  /** Most regions a plan may have. */
  public static final int MAX_REGIONS = 127;

  private static final int REGION_SHIFT = 56;
  private static final long HANDLE_MASK = (1L << REGION_SHIFT) - 1;

  /**
   * One region other than the one under test.
   *
   * @param name what the region holds, for messages and counters ({@code activations})
   * @param allocator the model managing it
   * @param takes whether a request goes there
   */
  public record Route(String name, Allocator allocator, Predicate<AllocRequest> takes) {}

  private final Allocator[] allocators;
  private final String[] names;
  private final List<Predicate<AllocRequest>> takes;

  /** The region under test alone: every request goes to {@code tested}. */
  public RegionRouter(Allocator tested) {
    this(tested, List.of());
  }

  /** The region under test and the other regions, tried in the order given. */
  public RegionRouter(Allocator tested, List<Route> others) {
    if (others.size() + 1 > MAX_REGIONS) {
      throw new IllegalArgumentException("at most " + MAX_REGIONS + " regions");
    }
    allocators = new Allocator[others.size() + 1];
    names = new String[others.size() + 1];
    takes = new ArrayList<>();
    allocators[0] = tested;
    names[0] = "tested";
    takes.add(r -> true);
    for (int i = 0; i < others.size(); i++) {
      allocators[i + 1] = others.get(i).allocator();
      names[i + 1] = others.get(i).name();
      takes.add(others.get(i).takes());
    }
  }

  /** Returns the number of regions. */
  public int size() {
    return allocators.length;
  }

  /** Returns the model of region {@code index} (0 is the region under test). */
  public Allocator allocator(int index) {
    return allocators[index];
  }

  /** Returns the name of region {@code index}. */
  public String name(int index) {
    return names[index];
  }

  /** Returns the index of the region that serves {@code request}. */
  public int route(AllocRequest request) {
    for (int i = 1; i < allocators.length; i++) {
      if (takes.get(i).test(request)) {
        return i;
      }
    }
    return 0;
  }

  /** Returns the code naming {@code handle} of region {@code region} (Note [Handle encoding]). */
  public static long encode(int region, long handle) {
    if ((handle & ~HANDLE_MASK) != 0) {
      throw new IllegalStateException("allocator handle " + handle + " does not fit in 56 bits");
    }
    return ((long) region << REGION_SHIFT) | handle;
  }

  /** Returns the region index of a code. */
  public static int regionOf(long code) {
    return (int) (code >>> REGION_SHIFT);
  }

  /** Returns the model's handle of a code. */
  public static long handleOf(long code) {
    return code & HANDLE_MASK;
  }

  /** Runs every region's invariant checker. */
  public void checkInvariants() {
    for (Allocator a : allocators) {
      a.checkInvariants();
    }
  }
}
