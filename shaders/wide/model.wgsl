// The model slot of the wide engine. A plan substitutes its model's ALA source for this file
// (see `wide::ModelSpec`); on its own it is logistic regression, so the engine validates.
#import wide/linear
#import wide/loss_logistic
