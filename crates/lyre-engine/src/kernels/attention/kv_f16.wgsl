enable f16;

// The KV cache in f16 (KvFormat::F16): kv_round(x) is f32(f16(x)), the value the cache stores
// for x, rounded to nearest even in integer arithmetic. Written as f32(kv_t(x)), the fused
// decode step's attention came out up to 2.4e-4 away from the two kernels that read the row's
// key and value back from the cache on an H100 (their caches equal): the driver's compiler
// dropped the round trip. With kv_round the two agree there.
alias kv_t = f16;

fn kv_round(x: f32) -> f32 {
    // Below f16's smallest normal (2^-14) its values are the multiples of 2^-24.
    if (abs(x) < 6.103515625e-5) {
        return round(x * 16777216.0) / 16777216.0;
    }
    // Keep 10 of the 23 mantissa bits, ties to even.
    let bits = bitcast<u32>(x);
    let lsb = (bits >> 13u) & 1u;
    return bitcast<f32>((bits + 0xfffu + lsb) & ~0x1fffu);
}
