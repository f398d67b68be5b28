"""BERT pretraining on the cluster: data preparation, the shard reader, the trainer and its benchmark."""
