/**
 * The allocator SPI: what every allocator model offers the engine, and nothing else.
 *
 * <h2>Glossary</h2>
 *
 * <ul>
 *   <li><b>Region</b>: a contiguous range of the simulated device that one model manages.
 *   <li><b>Segment</b>: memory obtained from the driver in one call ({@code cudaMalloc}), or one
 *       virtual reservation mapped on demand (an expandable segment). Arena models hold the whole
 *       region as one segment.
 *   <li><b>Block</b>: a contiguous piece of a segment, allocated or free (PyTorch's sense). In the
 *       slab models, one fixed-size slot of a class.
 *   <li><b>Page</b>: a KV page of {@code block_tokens} tokens ({@code block_tokens × bytes_per_token}
 *       bytes), vLLM's "block"; not an OS page.
 *   <li><b>Physical page</b>: in the vAttention model, a fixed-size piece of device memory
 *       ({@code page-size}) created once and mapped behind a virtual range on demand.
 *   <li><b>Virtual range</b>: in the vAttention model, the contiguous range of virtual addresses an
 *       allocation gets, in the model's virtual space apart from its region, backed by physical
 *       pages that need not be adjacent.
 *   <li><b>Map, unmap</b>: attaching a physical page behind a page of a virtual range ({@code
 *       cuMemMap}), and detaching it ({@code cuMemUnmap}) so that it returns to the pool.
 *   <li><b>Slab</b>: an array of equal blocks of one size class.
 *   <li><b>Extent</b>: an address range [offset, offset + size) handed to a caller (a virtual range
 *       for the vAttention model).
 *   <li><b>Order, buddy</b>: in the buddy model, a block of order k holds {@code min-block × 2^k}
 *       bytes; its buddy is the other half of the block of order k + 1 it was split from.
 *   <li><b>Reserved / allocated / requested</b>: bytes held from the device / bytes in allocated
 *       blocks, rounding included / bytes callers asked for.
 * </ul>
 *
 * <p>Each registry entry declares its {@link kvsim.alloc.Capability capabilities}: whether an
 * allocation is one contiguous extent or whole fixed-size blocks, and whether it is a virtual range
 * backed by pages mapped on demand.
 */
package kvsim.alloc;
