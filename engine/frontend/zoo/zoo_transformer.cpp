// transformer_encoder: BERT-like. Token + position embeddings, LayerNorm, `layers` post-LN
// encoder blocks (self-attention, GELU feed-forward of 4*hidden), a classifier on token 0.
// Input: token ids i64 [batch, seq].
#include "engine/frontend/zoo/zoo_internal.h"

namespace ms::zoo::detail {
namespace {

using namespace ms::nn;

class EncoderLayer : public Module {
 public:
  EncoderLayer(int64_t hidden, int64_t heads) {
    attn_ = register_module("attention", std::make_shared<MultiHeadAttention>(hidden, heads));
    ln1_ = register_module("ln1", std::make_shared<LayerNorm>(hidden, 1e-12f));
    fc1_ = register_module("intermediate", std::make_shared<Dense>(hidden, 4 * hidden));
    act_ = register_module("gelu", std::make_shared<GELU>());
    fc2_ = register_module("output", std::make_shared<Dense>(4 * hidden, hidden));
    ln2_ = register_module("ln2", std::make_shared<LayerNorm>(hidden, 1e-12f));
  }
  Var forward(const Var& x) override {
    Var h = (*ln1_)(F::add(x, (*attn_)(x)));
    return (*ln2_)(F::add(h, (*fc2_)((*act_)((*fc1_)(h)))));
  }
  std::string type_name() const override { return "EncoderLayer"; }

 private:
  std::shared_ptr<Module> attn_, ln1_, fc1_, act_, fc2_, ln2_;
};

class Encoder : public Module {
 public:
  Encoder(int64_t vocab, int64_t seq, int64_t hidden, int64_t heads, int64_t layers, int64_t classes) {
    tok_ = register_module("embeddings", std::make_shared<Embedding>(vocab, hidden));
    pos_ = register_module("position_embeddings", std::make_shared<Embedding>(seq, hidden));
    ln_ = register_module("embeddings_ln", std::make_shared<LayerNorm>(hidden, 1e-12f));
    auto list = std::make_shared<ModuleList>();
    for (int64_t i = 0; i < layers; ++i) list->push_back(std::make_shared<EncoderLayer>(hidden, heads));
    layers_ = register_module("encoder", list);
    pooler_ = register_module("pooler", std::make_shared<Dense>(hidden, hidden));
    cls_ = register_module("classifier", std::make_shared<Dense>(hidden, classes));
    std::vector<int64_t> pos(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) pos[static_cast<size_t>(i)] = i;
    positions_ = Tensor::from_vector<int64_t>(pos, {seq});
  }
  Var forward(const Var& ids) override {
    Var x = F::add((*tok_)(ids), (*pos_)(Var(positions_)));  // [b, s, h] + [s, h]
    x = (*ln_)(x);
    for (size_t i = 0; i < layers_->size(); ++i) x = (*layers_)[i](x);
    Var first = F::gather(x, F::constant(Tensor::scalar<int64_t>(0)), 1);  // [b, h]
    return (*cls_)(F::tanh((*pooler_)(first)));
  }
  std::string type_name() const override { return "TransformerEncoder"; }

 private:
  std::shared_ptr<Module> tok_, pos_, ln_, pooler_, cls_;
  std::shared_ptr<ModuleList> layers_;
  Tensor positions_;
};

}  // namespace

void add_transformer_templates(std::vector<Template>& out) {
  out.push_back(
      {"transformer_encoder",
       "BERT-like encoder: embeddings, post-LN self-attention blocks (GELU FFN 4x), classifier on token 0",
       {batch_param(1),
        {"seq", 128, 1, 65536, "sequence length (input ids [batch, seq])"},
        classes_param(2),
        {"layers", 12, 1, 256, "encoder blocks"},
        {"hidden", 768, 8, 65536, "hidden size"},
        {"heads", 12, 1, 1024, "attention heads (must divide hidden)"},
        {"vocab", 30522, 2, 1 << 22, "vocabulary size"},
        seed_param()},
       [](const Params& p) -> Expected<Model> {
         if (p.at("hidden") % p.at("heads") != 0)
           return invalid_argument("hidden=" + std::to_string(p.at("hidden")) +
                                   " is not divisible by heads=" + std::to_string(p.at("heads")));
         auto m = std::make_shared<Encoder>(p.at("vocab"), p.at("seq"), p.at("hidden"), p.at("heads"), p.at("layers"),
                                            p.at("classes"));
         return Model{"transformer_encoder", m, {"input_ids"}, {static_type(DType::I64, {p.at("batch"), p.at("seq")})}};
       }});
}

}  // namespace ms::zoo::detail
