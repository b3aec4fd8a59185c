// The end of both subgroup attention kernels (attention_sg.wgsl, attention_rope_sg.wgsl), with
// their shared constants: each subgroup holds an online-softmax state over its share of the keys
// (running max, running sum, and the weighted values of its lane's dims); the states meet in
// workgroup memory and the workgroup writes the head's output.

const WG: u32 = 256u;
const MAX_DPL: u32 = 8u;
// WG / the smallest subgroup (4) subgroups; WG × MAX_DPL partial outputs.
const MAX_NSG: u32 = 64u;
const NEG: f32 = -3.0e38;

var<workgroup> sg_max: array<f32, MAX_NSG>;
var<workgroup> sg_sum: array<f32, MAX_NSG>;
var<workgroup> sg_acc: array<f32, 2048>;

// Merges subgroup `s`'s state (lane `lane` holds dims lane + SG·i, i < dpl) with the others'
// and writes the head's `hd` outputs from output index `dst` through the kernel's `store_out`,
// and the merged softmax state (max, sum) through its `store_state` (kept only where a head's
// keys are split over workgroups). Called from uniform control flow (it has a barrier).
fn merge_and_store(t: u32, s: u32, lane: u32, dpl: u32, hd: u32, m_run: f32, l_run: f32,
                   acc: array<f32, 8>, dst: u32) {
    if (lane == 0u) {
        sg_max[s] = m_run;
        sg_sum[s] = l_run;
    }
    for (var i = 0u; i < MAX_DPL; i++) {
        if (i < dpl) {
            sg_acc[s * hd + lane + i * SG] = acc[i];
        }
    }
    workgroupBarrier();
    let nsg = WG / SG;
    var m_all = NEG;
    for (var g = 0u; g < nsg; g++) {
        m_all = max(m_all, sg_max[g]);
    }
    var l_all = 0.0;
    for (var g = 0u; g < nsg; g++) {
        l_all += sg_sum[g] * exp(sg_max[g] - m_all);
    }
    if (t == 0u) {
        store_state(dst, m_all, l_all);
    }
    for (var d = t; d < hd; d += WG) {
        var o = 0.0;
        for (var g = 0u; g < nsg; g++) {
            o += sg_acc[g * hd + d] * exp(sg_max[g] - m_all);
        }
        store_out(dst + d, o / l_all);
    }
}
