package kvsim.devicemodel;

import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.ModelPreset;

/**
 * A forward pass of a model split over {@code gpus} GPUs by tensor parallelism (README, "Several
 * GPUs"; Megatron-LM's split, Shoeybi et al., arXiv 1909.08053, as vLLM runs it): one GPU's pass
 * over its share of the model ({@link ModelPreset#perGpu}: 1/N of the weights, FLOPs and KV bytes
 * read, timed by the inner predictor on one GPU) plus the all-reduces that join the shares (Note
 * [All-reduces of a forward pass]).
 *
 * <p>Note [All-reduces of a forward pass]: a layer split Megatron's way reduces its partial sums
 * twice, after the attention output projection and after the MLP down projection (vLLM's {@code
 * RowParallelLinear} with {@code reduce_results}); each all-reduces the batch's hidden states,
 * tokens × width × dtype bytes. vLLM's {@code VocabParallelEmbedding} all-reduces the embedding's
 * output once more per pass, which kvsim counts too: 2 × layers + 1 all-reduces of the same size,
 * each timed by {@link AllReduce}. Not modelled: the gather of the LM head's logits (one sequence's
 * vocabulary row each, small beside the hidden states), any overlap of communication with compute
 * (vLLM runs them one after the other), and the per-sequence attention term, which is charged per
 * GPU as on one GPU.
 *
 * @param inner the predictor of one GPU's share
 * @param model the whole model (its width and layers size the all-reduces)
 * @param gpu one GPU of the node
 * @param gpus the tensor-parallel degree, at least 2
 */
public record TensorParallelForwardTime(ForwardTimeModel inner, ModelPreset model, DeviceSpec gpu, int gpus) implements ForwardTimeModel {
  public TensorParallelForwardTime {
    if (gpus < 2) {
      throw new IllegalArgumentException("tensor parallelism needs at least 2 GPUs, got " + gpus);
    }
  }

  /** Returns the all-reduce time of a pass over {@code tokens} tokens (Note [All-reduces of a forward pass]), in nanoseconds. */
  public double allReduceNanos(long tokens) {
    if (tokens == 0) {
      return 0;
    }
    double bytes = (double) tokens * model.hiddenSize() * model.dtypeBytes();
    return (2.0 * model.layers() + 1) * AllReduce.nanos(gpu, gpus, bytes);
  }

  @Override
  public long forwardNanos(long prefillTokens, long decodeTokens, long kvBytesRead, int sequences) {
    return inner.forwardNanos(prefillTokens, decodeTokens, kvBytesRead, sequences) + Math.round(allReduceNanos(prefillTokens + decodeTokens));
  }

  @Override
  public long engineOverheadNanos() {
    return inner.engineOverheadNanos();
  }

  @Override
  public Map<String, Object> echo() {
    Map<String, Object> m = new LinkedHashMap<>(inner.echo());
    m.put("tensor_parallel", gpus);
    m.put("all_reduce", AllReduce.describe(gpu, gpus));
    return m;
  }
}
