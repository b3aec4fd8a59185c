// The KV cache in f32 (KvFormat::F32): kv_round(x) is the value the cache stores for x.
alias kv_t = f32;

fn kv_round(x: f32) -> f32 {
    return x;
}
