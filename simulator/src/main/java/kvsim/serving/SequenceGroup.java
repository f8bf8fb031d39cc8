package kvsim.serving;

import kvsim.trace.Request;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;

/**
 * One request as a sequence group ({@code SequenceGroup} of vLLM v0's {@code vllm/sequence.py}, at
 * commit 1fb9c1b; forked through {@code BlockSpaceManagerV2.fork}): one
 * prompt and the sequences that sample from it, {@code n} parallel samples or {@code beam_width}
 * beams. A group of width 1 is an ordinary request.
 *
 * <ul>
 *   <li>Forking groups (vLLM v0, the Orca baselines, a plain PyTorch program): the lead sequence
 *       prefills the prompt alone; when it samples its first token the engine forks every other
 *       sequence from it ({@link KvManager.Forking#fork}), and from then on they decode side by side.
 *   <li>Fanned-out groups (vLLM v1, whose front end turns {@code n > 1} into independent child
 *       requests, {@code ParentRequest} in vllm/v1/engine/parallel_sampling.py): every sequence is
 *       its own request from arrival on and shares the prompt only through the prefix cache.
 *   <li>Output length: every sequence, sample or beam, produces the request's output tokens (the
 *       trace gives one length per request).
 *   <li>The group finishes when its last sequence does; its latency runs to then.
 * </ul>
 *
 * <p>Note [Beam selection]: real beam search keeps, after every step, the {@code beam_width}
 * most likely continuations, so some beams are dropped and others continue twice; that fork and
 * free pattern is what drives vLLM's copy-on-write and reference counts. kvsim has no
 * probabilities, so after every step in which all beams sampled, the group draws {@code w}
 * parents uniformly among its {@code w} beams, with replacement, from a random stream of its own
 * (Commons RNG's XO_RO_SHI_RO_128_PP seeded with the run seed and the request id, so the choice
 * never depends on other requests or on scheduling). A beam drawn at least once survives in its
 * own KV slot; a beam never drawn is dropped; each extra draw of a surviving beam (draws beyond
 * its first, in draw order) refills the slot of a dropped beam (lowest slot first) with a fork of
 * it. About {@code (1 − 1/w)^w} of the beams (a third for large {@code w}) are replaced per step.
 */
public final class SequenceGroup {
  final Request request;
  final Sequence[] sequences;
  final boolean beam;
  final boolean forking;
  private final UniformRandomProvider rng;
  int finishedSequences;
  private long stepIteration = -1;
  private int stepSamples;
  long firstTokenNanos = -1;
  long finishNanos = -1;

  SequenceGroup(Request request, int maxOutputTokens, boolean forking, long seed) {
    this.request = request;
    this.beam = request.beamWidth() > 1;
    int width = beam ? request.beamWidth() : request.samples();
    this.forking = forking && width > 1;
    this.sequences = new Sequence[width];
    for (int i = 0; i < width; i++) {
      sequences[i] = new Sequence(request, maxOutputTokens, this, i);
    }
    this.rng = beam && this.forking ? RandomSource.XO_RO_SHI_RO_128_PP.create(new long[] {seed, request.id()}) : null;
  }

  /** The group of one sequence made outside a group. */
  SequenceGroup(Sequence only) {
    this.request = only.request;
    this.beam = false;
    this.forking = false;
    this.sequences = new Sequence[] {only};
    this.rng = null;
  }

  /** Returns the sequences a group of this width holds at most (vLLM's {@code get_max_num_running_seqs}). */
  public int width() {
    return sequences.length;
  }

  /** Returns the lead sequence, the one that prefills the prompt of a forking group. */
  Sequence lead() {
    return sequences[0];
  }

  /** Returns whether the group forks its sequences from the lead (rather than running them apart). */
  boolean forking() {
    return forking;
  }

  /** Returns the request. */
  public Request request() {
    return request;
  }

  /**
   * Draws the parents of the next step's beams (Note [Beam selection]): {@code parents[i]} is
   * {@code i} for a surviving beam and, for a dropped beam's slot, the surviving beam it forks.
   */
  int[] drawParents() {
    int w = sequences.length;
    int[] draws = new int[w];
    boolean[] drawn = new boolean[w];
    for (int i = 0; i < w; i++) {
      draws[i] = rng.nextInt(w);
    }
    int[] parents = new int[w];
    for (int i = 0; i < w; i++) {
      parents[i] = -1;
    }
    int[] extra = new int[w];
    int extras = 0;
    for (int d : draws) {
      if (drawn[d]) {
        extra[extras++] = d;
      } else {
        drawn[d] = true;
        parents[d] = d;
      }
    }
    int next = 0;
    for (int i = 0; i < w; i++) {
      if (parents[i] < 0) {
        parents[i] = extra[next++];
      }
    }
    return parents;
  }

  /**
   * Counts a beam's sample in iteration {@code iteration}; returns true when all the group's beams
   * have sampled in it.
   */
  boolean countStepSample(long iteration) {
    if (stepIteration != iteration) {
      stepIteration = iteration;
      stepSamples = 0;
    }
    return ++stepSamples == sequences.length;
  }

  /** Returns whether every sequence has finished. */
  boolean finished() {
    return finishedSequences == sequences.length;
  }
}
