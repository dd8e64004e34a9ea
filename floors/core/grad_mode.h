// The thread's autograd state: grad mode and inference mode (c10's AutogradState).
//
// Note [Grad mode is a flag, not a key]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As in PyTorch, no_grad() changes no key set: it sets a thread-local flag
// that the Autograd kernels read (and then record nothing). Every call still
// goes through the Autograd key and pays for that check. Inference mode goes
// further: besides turning grad mode off it excludes the Autograd and
// ADInplaceOrView keys from the thread's calls (dispatcher.h, InferenceMode),
// so they are skipped outright, and tensors made in it carry neither key
// (TensorImpl::inference).
#pragma once

namespace descent {

struct AutogradState {
  bool grad_mode = true;        // torch.is_grad_enabled()
  bool inference_mode = false;  // torch.is_inference_mode_enabled()
};
AutogradState& autograd_state();  // the calling thread's

inline bool grad_mode_enabled() { return autograd_state().grad_mode; }

// RAII: sets grad mode for the scope, then restores it (torch.set_grad_enabled).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : saved_(autograd_state().grad_mode) { autograd_state().grad_mode = enabled; }
  ~AutoGradMode() { autograd_state().grad_mode = saved_; }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool saved_;
};
// torch.no_grad(): grad mode off for the scope.
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};

}  // namespace descent
