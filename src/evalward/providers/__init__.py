"""Model providers behind one interface: a chat request in, a chat response out."""
