import { InvalidUsername } from './errors.js';
import { isResourceName } from './resource-name.js';

export type Username = string & { readonly __brand: 'Username' };

export const Username = {
  parse(value: string): Username {
    if (!isResourceName(value)) throw new InvalidUsername();
    return value as Username;
  },
};
