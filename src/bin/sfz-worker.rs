use std::ffi::CStr;
fn main() {
    unsafe {
        sfz::runtime::ffi::sfz_init(1);
        let n = sfz::runtime::ffi::sfz_op_count();
        let s = sfz::runtime::ffi::sfz_op_schema(0);
        println!("{n} {}", CStr::from_ptr(s).to_string_lossy());
        let t = tch::Tensor::from_slice(&[1.0f32, 2.0]).exp();
        println!("{t}");
    }
}
