import { InvalidProjectName } from './errors.js';
import { isResourceName } from './resource-name.js';

export type ProjectName = string & { readonly __brand: 'ProjectName' };

export const ProjectName = {
  parse(value: string | undefined): ProjectName {
    if (value === undefined || !isResourceName(value)) throw new InvalidProjectName();
    return value as ProjectName;
  },
};
